"""The cache board on Valkey (or Redis): one hash per deliberation, one key for the position.

Keys, under ``key_prefix``: ``<prefix>deliberation:<uuid>`` (a hash, see ``codec``) and
``<prefix>projection:<name>:position``. One Lua script compares the position, replaces the hash,
sets its TTL and moves the position, so no reader or crash ever sees one without the other, and a
redelivered event (a position at or below the stored one) changes nothing.

Terminal entries expire after ``cleanup_seconds`` (0: never); a reader that misses falls back to
a replay (``view_from_aggregate``). In a Valkey cluster both keys must share a slot: give a
prefix with a hash tag (``"{fleet}:"``).

Thread-safety: valkey-py clients are thread-safe (a connection pool); the board holds no state.
"""

from __future__ import annotations

from uuid import UUID

from valkey import Valkey

from projectors.cache.board import DeliberationBoard
from projectors.cache.codec import decode_view, encode_view
from projectors.cache.view import DeliberationView

__all__ = ["ValkeyDeliberationBoard"]

# KEYS: position, entry. ARGV: position, ttl seconds (0: none), then field, value, ... (none: drop).
_PUT = """
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local position = tonumber(ARGV[1])
if position <= current then return 0 end
redis.call('DEL', KEYS[2])
if #ARGV > 2 then
  redis.call('HSET', KEYS[2], unpack(ARGV, 3))
  local ttl = tonumber(ARGV[2])
  if ttl > 0 then redis.call('EXPIRE', KEYS[2], ttl) end
end
redis.call('SET', KEYS[1], ARGV[1])
return 1
"""


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class ValkeyDeliberationBoard(DeliberationBoard):
    """Deliberation views in Valkey.

    Args:
        valkey: a connected client (``decode_responses`` either way).
        key_prefix: prefix of every key this board touches, e.g. ``"fleet:"``.
        name: the projection's name, part of the position key.
        cleanup_seconds: TTL of terminal entries; 0 keeps them.
    """

    def __init__(
        self,
        valkey: Valkey,
        *,
        key_prefix: str = "fleet:",
        name: str = "cache",
        cleanup_seconds: int = 3600,
    ) -> None:
        self._valkey = valkey
        self._prefix = key_prefix
        self._position_key = f"{key_prefix}projection:{name}:position"
        self._cleanup_seconds = cleanup_seconds
        self._put = valkey.register_script(_PUT)

    def key(self, deliberation_id: UUID) -> str:
        """The hash key of one deliberation (for tools and tests)."""
        return f"{self._prefix}deliberation:{deliberation_id}"

    def position(self) -> int:
        raw = self._valkey.get(self._position_key)
        return int(_text(raw)) if raw is not None else 0  # type: ignore[arg-type]

    def get(self, deliberation_id: UUID) -> DeliberationView | None:
        raw = self._valkey.hgetall(self.key(deliberation_id))
        fields = {_text(k): _text(v) for k, v in raw.items()}  # type: ignore[union-attr]
        return decode_view(fields)

    def put(self, deliberation_id: UUID, view: DeliberationView | None, *, position: int) -> bool:
        args: list[str | int] = [position, 0]
        if view is not None:
            args[1] = self._cleanup_seconds if view.is_terminal else 0
            for field, value in encode_view(view, position=position).items():
                args += [field, value]
        keys = [self._position_key, self.key(deliberation_id)]
        return int(self._put(keys=keys, args=args)) == 1
