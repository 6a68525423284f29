// MCP cancellation through `amp mcp`, by the official TypeScript SDK: the
// Client starts a long poll (the wait tool, 600 s), then aborts it, which
// sends notifications/cancelled; the server must end that `amp wait` and
// go on answering.
//
// Usage: node cancel.mjs REPO
// Prints one JSON object: how the aborted call ended, what the next call
// returned and after how many ms, and the server's child processes left.
import { execFileSync } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [repo] = process.argv.slice(2);
const transport = new StdioClientTransport({
	command: 'amp',
	args: ['mcp', '--from', 'executor', '--repo', repo],
	env: { ...process.env },
	stderr: 'inherit',
});
const client = new Client({ name: 'amp-test-cancel', version: '1.0.0' });
await client.connect(transport);

// The server's children, by its pid: `amp wait` while it runs.
const children = () => {
	try {
		return execFileSync('ps', ['-o', 'args=', '--ppid', String(transport.pid)], { encoding: 'utf8' })
			.split('\n').filter((l) => l.trim());
	} catch {
		return [];
	}
};

const out = {};
const abort = new AbortController();
const waiting = client.callTool({ name: 'wait', arguments: { timeout: 600 } }, undefined,
	{ signal: abort.signal, timeout: 700000 });
// Aborted once the server runs it: the wait is its child then.
for (let i = 0; i < 200 && !children().some((c) => c.includes(' wait ')); i++)
	await new Promise((r) => setTimeout(r, 50));
out.running = children().filter((c) => c.includes(' wait ')).length;
abort.abort('the agent moved on');
try {
	await waiting;
	out.aborted = 'resolved';
} catch (e) {
	out.aborted = e.name;
}
// The next call is answered at once: the server is not held by the wait.
const t0 = Date.now();
const status = await client.callTool({ name: 'status', arguments: {} }, undefined, { timeout: 20000 });
out.next_ms = Date.now() - t0;
out.next = status.isError ? 'error' : Object.keys(status.structuredContent);
out.left = children().filter((c) => c.includes(' wait ')).length;
await client.close();
console.log(JSON.stringify(out));
