// The official OpenAI Node SDK (the exact version in package.json) as a real client of a
// started mediagen: create, poll (createAndPoll when the SDK has it, else retrieve), retrieve,
// list with auto-pagination, downloadContent to a file, delete twice, and a create repeated
// with one Idempotency-Key. It prints one JSON
// object with what the SDK returned; cmd/mediagen's TestOpenAINodeSDK checks it.
//
// usage: BASE_URL=http://127.0.0.1:PORT/v1 API_KEY=... node videos.mjs OUTPUT_DIR
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import OpenAI from 'openai';

const [outDir] = process.argv.slice(2);
if (!process.env.BASE_URL || !process.env.API_KEY || !outDir) {
  console.error('usage: BASE_URL=... API_KEY=... node videos.mjs OUTPUT_DIR');
  process.exit(2);
}
const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY, maxRetries: 0, timeout: 30_000 });

// poll reads the task until it is terminal; bounded, so a stuck task fails the run.
async function poll(id) {
  for (let i = 0; i < 300; i++) {
    const v = await client.videos.retrieve(id);
    if (v.status === 'completed' || v.status === 'failed') return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`task ${id} not terminal after 300 polls`);
}

// apiError keeps what the SDK's error says about the answer, for the test to check.
function apiError(err) {
  if (err instanceof OpenAI.APIError) return { status: err.status, type: err.type, code: err.code, param: err.param };
  throw err;
}

const out = { sdk_version: OpenAI.VERSION ?? null };
const created = await client.videos.create({ model: 'demo-video-fast', prompt: 'a paper boat on a pond', seconds: '4', size: '1280x720' });
out.created = created;

const hasCreateAndPoll = typeof client.videos.createAndPoll === 'function';
out.create_and_poll = hasCreateAndPoll
  ? await client.videos.createAndPoll({ model: 'demo-video-fast', prompt: 'a kite', seconds: '4', size: '720x1280' })
  : null;

out.polled = await poll(created.id);
out.retrieved = await client.videos.retrieve(created.id);

out.listed = [];
for await (const v of client.videos.list({ limit: 1 })) out.listed.push(v.id);

const content = await client.videos.downloadContent(created.id);
out.content_status = content.status;
out.content_type = content.headers.get('content-type');
const file = join(outDir, 'content.mp4');
const bytes = Buffer.from(await content.arrayBuffer());
await writeFile(file, bytes);
out.content_file = file;
out.content_bytes = bytes.length;

out.deleted = await client.videos.delete(created.id);
out.deleted_again = await client.videos.delete(created.id).catch(apiError);
out.after_delete = await client.videos.retrieve(created.id);
out.content_after_delete = await client.videos.downloadContent(created.id).then((r) => ({ status: r.status }), apiError);

// The Idempotency-Key header (a request option of the SDK): the same create twice is one
// task; the same key with another prompt is a 409 naming the header.
const idem = { headers: { 'Idempotency-Key': 'node-sdk-retry-1' } };
const once = { model: 'demo-video-fast', prompt: 'a lighthouse', seconds: '4', size: '1280x720' };
out.idempotent = [(await client.videos.create(once, idem)).id, (await client.videos.create(once, idem)).id];
out.idempotency_conflict = await client.videos.create({ ...once, prompt: 'another lighthouse' }, idem).then((v) => ({ id: v.id }), apiError);

console.log(JSON.stringify(out));
