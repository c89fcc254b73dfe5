"""The cache board on Valkey (or Redis): one hash per deliberation, one key for the position.

Keys, under ``key_prefix``: ``<prefix>deliberation:<uuid>`` (a hash, see ``codec``) and
``<prefix>projection:<name>:position``. One Lua script compares the position, replaces the hash,
sets its TTL and moves the position, so no reader or crash ever sees one without the other, and a
redelivered event (a position at or below the stored one) changes nothing.

Terminal entries expire after ``cleanup_seconds`` (0: never); a reader that misses falls back to
a replay (``view_from_aggregate``). In a Valkey cluster every key must share a slot: give a
prefix with a hash tag (``"{fleet}:"``).

Fencing keys: ``<prefix>projection:<name>:fence`` holds ``<epoch>:<owner>`` (no TTL) and
``<prefix>projection:<name>:lease`` the owner with a ``PX`` expiry. ``_CLAIM`` takes a free or
expired lease (SET … PX) and, for a new owner, the next epoch; ``_PUT_MANY`` checks the fence and
the position it was based on, renews the lease, writes every entry and moves the position, all in
one script. A catch-up batch is one script call, its reads one pipeline of ``HGETALL``.
An emptied server (restart without persistence) loses the fence too, so the old writer's next
write is refused and it re-claims and resumes from the (now 0) position: the cache refills.

Thread-safety: valkey-py clients are thread-safe (a connection pool); the board holds no state.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from uuid import UUID

from valkey import Valkey

from application.views import DeliberationView
from projectors.cache.board import DeliberationBoard
from projectors.cache.codec import decode_view, encode_view
from projectors.errors import PositionMovedError, ProjectionFencedError
from projectors.fence import Fence

__all__ = ["ValkeyDeliberationBoard"]

# KEYS: fence, lease. ARGV: owner, lease ms. Returns the epoch, or -1 while another owner's
# lease is live.
_CLAIM = """
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[1] then return -1 end
local fence = redis.call('GET', KEYS[1]) or '0:'
local sep = string.find(fence, ':', 1, true)
local epoch = tonumber(string.sub(fence, 1, sep - 1))
if string.sub(fence, sep + 1) ~= ARGV[1] then
  epoch = epoch + 1
  redis.call('SET', KEYS[1], epoch .. ':' .. ARGV[1])
end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return epoch
"""

# KEYS: position, fence, lease, entries... ARGV: base, position, fence ('' = unfenced), owner,
# lease ms, then the entries as one JSON array, one [ttl seconds (0: none), [field, value, ...]]
# per entry key, in KEYS order (no fields: drop the entry). One JSON argument instead of one
# argument per field: packing ~3,000 arguments per batch was a third of a catch-up's time in
# valkey-py, and cjson decodes the array in C.
# Returns {1, position} when written, {0, stored} when the position moved, {-1, fence} fenced.
_PUT_MANY = """
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if ARGV[3] ~= '' then
  local fence = redis.call('GET', KEYS[2]) or ''
  if fence ~= ARGV[3] then return {-1, fence} end
  redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[5])
end
if current ~= tonumber(ARGV[1]) then return {0, tostring(current)} end
local entries = cjson.decode(ARGV[6])
for k = 4, #KEYS do
  local entry = entries[k - 3]
  local ttl, fields = entry[1], entry[2]
  redis.call('DEL', KEYS[k])
  if #fields > 0 then
    redis.call('HSET', KEYS[k], unpack(fields))
    if ttl > 0 then redis.call('EXPIRE', KEYS[k], ttl) end
  end
end
redis.call('SET', KEYS[1], ARGV[2])
return {1, ARGV[2]}
"""


# KEYS: lease. ARGV: owner. Deletes the lease only if this owner holds it.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0
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
        self._fence_key = f"{key_prefix}projection:{name}:fence"
        self._lease_key = f"{key_prefix}projection:{name}:lease"
        self._cleanup_seconds = cleanup_seconds
        self._claim = valkey.register_script(_CLAIM)
        self._put_many = valkey.register_script(_PUT_MANY)
        self._release = valkey.register_script(_RELEASE)

    def key(self, deliberation_id: UUID) -> str:
        """The hash key of one deliberation (for tools and tests)."""
        return f"{self._prefix}deliberation:{deliberation_id}"

    @property
    def expiry_seconds(self) -> int:
        return self._cleanup_seconds

    def position(self) -> int:
        raw = self._valkey.get(self._position_key)
        return int(_text(raw)) if raw is not None else 0  # type: ignore[arg-type]

    def get(self, deliberation_id: UUID) -> DeliberationView | None:
        raw = self._valkey.hgetall(self.key(deliberation_id))
        return _decode(raw)  # type: ignore[arg-type]

    def get_many(self, ids: Iterable[UUID]) -> dict[UUID, DeliberationView | None]:
        ids = list(ids)
        pipe = self._valkey.pipeline(transaction=False)
        for d_id in ids:
            pipe.hgetall(self.key(d_id))
        return {d_id: _decode(raw) for d_id, raw in zip(ids, pipe.execute(), strict=True)}  # type: ignore[no-untyped-call]

    def claim(self, owner: str, lease_ms: int) -> Fence | None:
        epoch = int(self._claim(keys=[self._fence_key, self._lease_key], args=[owner, lease_ms]))
        return None if epoch < 0 else Fence(owner=owner, epoch=epoch, lease_ms=lease_ms)

    def release(self, owner: str) -> None:
        self._release(keys=[self._lease_key], args=[owner])

    def put_many(
        self,
        views: Mapping[UUID, DeliberationView | None],
        *,
        position: int,
        base: int,
        fence: Fence | None = None,
    ) -> None:
        keys = [self._position_key, self._fence_key, self._lease_key]
        token = f"{fence.epoch}:{fence.owner}" if fence else ""
        args: list[str | int] = [
            base, position, token, fence.owner if fence else "", fence.lease_ms if fence else 0
        ]  # fmt: skip
        entries: list[tuple[int, list[str]]] = []
        for d_id, view in views.items():
            keys.append(self.key(d_id))
            if view is None:
                entries.append((0, []))
                continue
            fields = encode_view(view, position=position)
            ttl = self._cleanup_seconds if view.is_terminal else 0
            entries.append((ttl, [x for pair in fields.items() for x in pair]))
        args.append(json.dumps(entries, ensure_ascii=False, separators=(",", ":")))
        status, detail = self._put_many(keys=keys, args=args)
        if int(status) == 1:
            return
        if int(status) == 0:
            stored = int(_text(detail))
            msg = f"cache: stored position {stored}, expected {base}"
            raise PositionMovedError(msg, stored)
        msg = f"cache: fence {token} replaced by {_text(detail) or 'nothing (store emptied)'}"
        raise ProjectionFencedError(msg)

    def reset(self) -> None:
        keys = [self._position_key]
        for key in self._valkey.scan_iter(match=f"{self._prefix}deliberation:*", count=1000):
            keys.append(_text(key))
            if len(keys) >= 1000:
                self._valkey.delete(*keys)
                keys = []
        if keys:
            self._valkey.delete(*keys)


def _decode(raw: Mapping[bytes | str, bytes | str]) -> DeliberationView | None:
    return decode_view({_text(k): _text(v) for k, v in raw.items()})
