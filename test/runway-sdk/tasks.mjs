// Drives a fake Runway with the official Node SDK, unchanged: argv[2] is the base URL,
// RUNWAYML_API_SECRET the key. Prints one JSON object of what the SDK returned, for
// cmd/mediagen's TestRunwayNodeSDK to check.
import RunwayML from '@runwayml/sdk';

const client = new RunwayML({ baseURL: process.argv[2], maxRetries: 0 });
const out = {};

async function poll(id) {
  for (let i = 0; i < 10; i++) {
    const t = await client.tasks.retrieve(id);
    if (['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(t.status)) return t;
  }
  throw new Error('task never ended');
}

const text = await client.textToVideo.create({ model: 'gen4.5', promptText: 'sdk text cat', ratio: '1280:720', duration: 5, seed: 42 });
out.text = await poll(text.id);

const image = await client.imageToVideo.create({
  model: 'gen4_turbo', promptImage: 'https://img.example.com/a.png', promptText: 'sdk image cat', ratio: '720:1280', duration: 10,
});
out.image = await poll(image.id);

const frames = await client.imageToVideo.create({
  model: 'gen4.5', promptImage: [{ uri: 'https://img.example.com/b.png', position: 'first' }], promptText: 'sdk frame cat', ratio: '960:960', duration: 5,
});
await client.tasks.delete(frames.id);
out.cancelled = await client.tasks.retrieve(frames.id);

try {
  await client.tasks.retrieve('00000000-0000-0000-0000-000000000000');
} catch (e) {
  out.missing = { status: e.status, name: e.constructor.name };
}
const bad = new RunwayML({ baseURL: process.argv[2], apiKey: 'key_wrong', maxRetries: 0 });
try {
  await bad.tasks.retrieve(text.id);
} catch (e) {
  out.refused = { status: e.status, name: e.constructor.name };
}
console.log(JSON.stringify(out));
