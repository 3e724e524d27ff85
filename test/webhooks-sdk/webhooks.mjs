// The official OpenAI Node SDK (test/webhooks-sdk pins 7.57.0), unchanged, against mediagen's
// webhooks: client.webhooks.create/retrieve/update/list/delete/rotateSecret/test on
// /v1/webhook_endpoints, and client.webhooks.unwrap on what mediagen sent to the test's
// receiver. BASE_URL and API_KEY name the service; HOOK_URL is the receiver (https, run by the
// Go test) and MAILBOX the plain-http page where the Go test lists what the receiver got:
// [{headers: {...}, body: "..."}]. Prints one JSON object of what each step saw.
import OpenAI from 'openai';

const { BASE_URL, API_KEY, HOOK_URL, MAILBOX } = process.env;
if (!BASE_URL || !API_KEY || !HOOK_URL || !MAILBOX) {
  console.error('usage: BASE_URL=… API_KEY=… HOOK_URL=… MAILBOX=… node webhooks.mjs');
  process.exit(2);
}
const client = new OpenAI({ baseURL: BASE_URL, apiKey: API_KEY, maxRetries: 0, timeout: 30_000 });
const out = {};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function mailbox(n) {
  for (let i = 0; i < 600; i++) {
    const got = await (await fetch(MAILBOX)).json();
    if (got.length >= n) return got;
    await sleep(100);
  }
  throw new Error(`the receiver did not get ${n} requests`);
}

async function finished(id) {
  for (let i = 0; i < 600; i++) {
    const v = await client.videos.retrieve(id);
    if (v.status === 'completed' || v.status === 'failed') return v;
    await sleep(100);
  }
  throw new Error(`video ${id} did not finish`);
}

// verdict unwraps a received request with the secret: the event, or the error's name.
async function verdict(req, secret) {
  try {
    const ev = await client.webhooks.unwrap(req.body, req.headers, secret);
    return { type: ev.type, object: ev.object, data_id: ev.data.id, id: ev.id };
  } catch (e) {
    return { error: e.constructor.name };
  }
}

const created = await client.webhooks.create({ name: 'sdk', url: HOOK_URL, event_types: ['video.completed', 'video.failed'] });
out.created = { object: created.object, has_secret: created.signing_secret.startsWith('whsec_'), hint: created.signing_secret_hint, event_types: created.event_types };
const secret = created.signing_secret;

const done = await client.videos.create({ model: 'demo-video-fast', prompt: 'a paper boat', seconds: '4', size: '1280x720' });
const failed = await client.videos.create({ model: 'demo-video-fast', prompt: 'boom [sandbox:fail]', seconds: '4', size: '1280x720' });
out.videos = { done: done.id, failed: failed.id, done_status: (await finished(done.id)).status, failed_status: (await finished(failed.id)).status };
const two = await mailbox(2);
out.events = await Promise.all(two.map((r) => verdict(r, secret)));
out.wrong_secret = await verdict(two[0], 'whsec_' + Buffer.from('not the secret, 32 bytes long...').toString('base64'));

const retrieved = await client.webhooks.retrieve(created.id);
out.retrieved = { id: retrieved.id, has_secret: 'signing_secret' in retrieved, url: retrieved.url };
const updated = await client.webhooks.update(created.id, { name: 'renamed' });
out.updated = { name: updated.name };
const second = await client.webhooks.create({ name: 'other', url: HOOK_URL + '/other', event_types: ['video.failed'] });
const listed = [];
for await (const ep of client.webhooks.list({ limit: 1 })) listed.push(ep.id);
out.listed = listed;
await client.webhooks.delete(second.id);

const rotated = await client.webhooks.rotateSecret(created.id, { keep_old_secret_active_for_24_hours: true });
out.rotated = { new_secret: rotated.signing_secret !== secret };
const tested = await client.webhooks.test(created.id, { event_type: 'video.completed' });
out.tested = tested;
const three = await mailbox(3);
out.after_rotation = { old: await verdict(three[2], secret), new: await verdict(three[2], rotated.signing_secret) };

const deleted = await client.webhooks.delete(created.id);
out.deleted = deleted;
const after = await client.videos.create({ model: 'demo-video-fast', prompt: 'a kite', seconds: '4', size: '1280x720' });
await finished(after.id);
await sleep(500);
out.after_delete = (await (await fetch(MAILBOX)).json()).length;
out.retrieve_deleted = await client.webhooks.retrieve(created.id).then(() => 'found', (e) => e.status);

console.log(JSON.stringify(out));
