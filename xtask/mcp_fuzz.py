"""Property test of the MCP tools through a real MCP client (the `mcp` SDK).

For every tool the server lists, hypothesis-jsonschema draws arguments from
the tool's own input schema and the client calls the tool over streamable
HTTP. A call fails the run when:

- the server answers with a protocol error (JSON-RPC error) or drops the call;
- arguments the schema allows are refused as malformed or invalid
  (`malformed_request` / `invalid_input`): the schema and the server disagree;
- the server reports an internal error.

Then, per tool, arguments the schema refuses (an unknown property, a wrong
type) must be refused, not acted on.

Run by `cargo xtask api-fuzz` (which installs the pinned `mcp`, `hypothesis`
and `hypothesis-jsonschema` into a cache directory for PYTHONPATH):

    mcp_fuzz.py http://127.0.0.1:PORT/mcp [--key KEY] [--examples N] [--seed N]
Exit status: 0 when every check held, 1 otherwise.
"""

import argparse
import asyncio
import json
import sys
import threading
import urllib.request

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from hypothesis_jsonschema import from_schema
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError

REFUSED_AS_BAD = {"malformed_request", "invalid_input"}


class Loop:
    """One event loop in a thread, holding the client session, so that
    hypothesis' synchronous tests can call tools one after another."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro, timeout=120):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)


class Client:
    def __init__(self, url, key):
        self.url = url
        self.headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.loop = Loop()
        self.session = None
        self._stack = None

    async def _open(self):
        from contextlib import AsyncExitStack

        self._stack = AsyncExitStack()
        read, write, _ = await self._stack.enter_async_context(
            streamablehttp_client(self.url, headers=self.headers)
        )
        self.session = await self._stack.enter_async_context(ClientSession(read, write))
        await self.session.initialize()

    def open(self):
        self.loop.run(self._open())

    def tools(self):
        return self.loop.run(self.session.list_tools()).tools

    def call(self, name, arguments):
        return self.loop.run(self.session.call_tool(name, arguments))

    def close(self):
        try:
            self.loop.run(self._stack.aclose(), timeout=10)
        except Exception:  # noqa: BLE001 - closing is best effort
            pass


def inline_refs(schema, depth=3):
    """The schema with every `$ref` to its `$defs` inlined, recursion cut
    after `depth` levels (hypothesis-jsonschema cannot draw from recursive
    references): deeper than that, a recursive type is a scalar."""
    defs = schema.get("$defs", {})

    def walk(node, seen):
        if isinstance(node, list):
            return [walk(n, seen) for n in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref[len("#/$defs/"):]
            rest = {k: v for k, v in node.items() if k != "$ref"}
            if seen.count(name) >= depth:
                target = {"type": ["null", "boolean", "number"]}
            else:
                target = walk(defs.get(name, {}), seen + [name])
            if not rest:
                return target
            return {"allOf": [target, walk(rest, seen)]}
        return {k: walk(v, seen) for k, v in node.items() if k != "$defs"}

    return walk(schema, [])


def error_code(result):
    body = result.structuredContent or {}
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict):
        return err.get("code"), err.get("message")
    text = " ".join(getattr(c, "text", "") for c in result.content or [])
    return None, text


def short(value, limit=300):
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "…"


def fixtures(base, key):
    """A plan and a space made over the HTTP API, so that drawn arguments
    can name records that exist (and reach the stores' checks past
    `not_found`)."""
    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = f"Bearer {key}"

    def post(path, body):
        request = urllib.request.Request(
            base + path, data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.loads(answer.read())

    plan = post("/v1/memory/plans", {"goal_event": "mcp-fuzz"})
    space = post("/v1/memory/spaces", {"title": "mcp-fuzz room"})
    return {"plan_id": plan["id"], "space": space["id"]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--key")
    parser.add_argument("--examples", type=int, default=40)
    parser.add_argument("--seed", type=int, default=None, help="fixed seed (default: random)")
    args = parser.parse_args()

    base = args.url.rsplit("/mcp", 1)[0]
    known = fixtures(base, args.key)
    client = Client(args.url, args.key)
    client.open()
    tools = client.tools()
    failures = []
    calls = 0

    for tool in tools:
        schema = inline_refs(tool.inputSchema)
        problems = []
        outcomes = {}

        @(seed(args.seed) if args.seed is not None else (lambda f: f))
        @settings(
            max_examples=args.examples,
            database=None,
            deadline=None,
            derandomize=False,
            suppress_health_check=list(HealthCheck),
        )
        @given(from_schema(schema), st.booleans())
        def valid_arguments_are_taken(arguments, existing):
            nonlocal calls
            calls += 1
            if existing:
                # Name records that exist, where an argument names one.
                for name, value in known.items():
                    if name in arguments:
                        arguments[name] = value
            # A long poll may wait up to 30 s by design: what is checked is
            # that the server takes the value, not that it waits.
            if isinstance(arguments.get("wait_ms"), int):
                arguments["wait_ms"] = min(arguments["wait_ms"], 20)
            try:
                result = client.call(tool.name, arguments)
            except McpError as e:
                problems.append(f"protocol error {e.error.code}: {e.error.message} for {short(arguments)}")
                return
            except Exception as e:  # noqa: BLE001 - a dropped call is a failure
                problems.append(f"the call failed: {e!r} for {short(arguments)}")
                return
            code = error_code(result)[0] if result.isError else "ok"
            outcomes[code] = outcomes.get(code, 0) + 1
            if result.isError:
                code, message = error_code(result)
                if code in REFUSED_AS_BAD:
                    problems.append(
                        f"schema-valid arguments refused ({code}): {message} for {short(arguments)}"
                    )
                elif code in (None, "internal"):
                    problems.append(f"server error ({code}): {message} for {short(arguments)}")

        try:
            valid_arguments_are_taken()
        except Unsatisfiable:
            problems.append("no arguments satisfy the schema")

        # Arguments the schema refuses are refused.
        for bad in ({"__unknown_property": 1}, {"__unknown_property": "x", "limit": "not a number"}):
            calls += 1
            try:
                result = client.call(tool.name, bad)
            except McpError:
                continue
            if not result.isError:
                problems.append(f"schema-invalid arguments accepted: {short(bad)}")
            else:
                code, message = error_code(result)
                if code not in REFUSED_AS_BAD:
                    problems.append(
                        f"schema-invalid arguments refused as {code}, not as malformed: {message}"
                    )

        status = "ok" if not problems else f"{len(problems)} problem(s)"
        answers = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items(), key=lambda kv: str(kv[0])))
        print(f"  {tool.name:<24} {status:<14} answers: {answers}")
        for p in problems[:3]:
            print(f"      {p}")
        failures.extend(f"{tool.name}: {p}" for p in problems)

    client.close()
    print(f"mcp-fuzz: {len(tools)} tools, {calls} calls, {len(failures)} problem(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
