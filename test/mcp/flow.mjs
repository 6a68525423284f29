// A whole AMP/1.0 task driven through `amp mcp` by the official MCP
// TypeScript SDK: one Client over StdioClientTransport per role, each
// talking to its own `amp mcp --from ROLE` process on the same SSOT.
//
// Usage: node flow.mjs REPO PAYLOAD_DIR TASK
// Prints one JSON object on stdout: the msg_ids written, what each step's
// tool returned that the test checks, and the negotiated revisions.
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [repo, payloads, task] = process.argv.slice(2);
const json = (name) => JSON.parse(readFileSync(`${payloads}/${name}`, 'utf8'));

async function connect(role) {
	// The executor is a named instance, as a claim needs.
	const agent = role === 'executor' ? ['--agent', 'executor-1'] : [];
	const transport = new StdioClientTransport({
		command: 'amp',
		args: ['mcp', '--from', role, ...agent, '--repo', repo],
		env: { ...process.env },
		stderr: 'inherit',
	});
	const client = new Client({ name: `amp-test-${role}`, version: '1.0.0' });
	await client.connect(transport);
	return client;
}

// A tool call that must succeed: its structured result.
async function call(client, name, args) {
	const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 60000 });
	if (r.isError)
		throw new Error(`${name} failed: ${JSON.stringify(r.structuredContent)}`);
	const text = JSON.parse(r.content[0].text);
	if (JSON.stringify(text) !== JSON.stringify(r.structuredContent))
		throw new Error(`${name}: the text content is not the structured one`);
	return r.structuredContent;
}

const roles = ['admin', 'coordinator', 'executor', 'reviewer'];
const c = {};
for (const role of roles)
	c[role] = await connect(role);
const out = { servers: {}, steps: {} };
for (const role of roles) {
	const info = c[role].getServerVersion();
	out.servers[role] = { name: info.name, tools: (await c[role].listTools()).tools.length };
}

// The executor waits before anything is addressed to it: the long poll
// returns once the dispatch is written.
const waiting = call(c.executor, 'wait', { timeout: 30 });
const dispatch = await call(c.coordinator, 'send_task_dispatch',
	{ task, to: 'executor', payload: json('dispatch.json') });
const woke = await waiting;
out.steps.wait = woke;

const inbox = await call(c.executor, 'inbox', {});
out.steps.inbox = inbox.messages.map((m) => m.msg_id);
out.steps.ack_dispatch = await call(c.executor, 'ack', { msg_id: dispatch.msg_id });
out.steps.claim = await call(c.executor, 'claim', { task });
const result = await call(c.executor, 'send_task_result',
	{ task, payload: json('result.json'), context_refs: [dispatch.msg_id] });

const coordInbox = await call(c.coordinator, 'wait', { timeout: 5 });
out.steps.coordinator_wait = coordInbox;
await call(c.coordinator, 'ack', { msg_id: result.msg_id });
const review = await call(c.coordinator, 'send_review_request', {
	task,
	payload: {
		original_dispatch_ref: dispatch.msg_id,
		task_result_ref: result.msg_id,
		review_scope: 'full',
		diff_url: 'https://example.invalid/compare/main...feature/watch-breath-v2',
		reject_count: 0,
	},
});

const shown = await call(c.reviewer, 'show', { msg_id: review.msg_id, context: true });
out.steps.show = shown;
await call(c.reviewer, 'ack', { msg_id: review.msg_id });
const verdictPayload = json('verdict.json');
const verdict = await call(c.reviewer, 'verdict', {
	task,
	decision: 'approved',
	confidence: 0.95,
	payload: { criteria_results: verdictPayload.criteria_results },
});

out.steps.status = await call(c.admin, 'status', { task });
out.steps.log = await call(c.admin, 'log', { task, limit: 100 });
const read = await c.admin.readResource({ uri: `amp://task/${task}` });
out.steps.resource = JSON.parse(read.contents[0].text);
const message = await c.admin.readResource({ uri: `amp://message/${verdict.msg_id}` });
out.steps.message = JSON.parse(message.contents[0].text);
out.steps.resources = (await c.admin.listResources()).resources.map((r) => r.uri);

out.msg_ids = {
	dispatch: dispatch.msg_id,
	result: result.msg_id,
	review_request: review.msg_id,
	verdict: verdict.msg_id,
};
for (const role of roles)
	await c[role].close();
process.stdout.write(JSON.stringify(out) + '\n');
