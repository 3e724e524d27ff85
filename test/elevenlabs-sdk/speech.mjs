// Drives the fake ElevenLabs API (internal/provider/elevenlabs/elevenlabsfake) with the
// official SDK, unchanged: text-to-speech convert with its raw response, models list, and a
// refused key. Prints one JSON object for TestElevenLabsNodeSDK to check.
// Usage: node speech.mjs BASE_URL KEY VOICE_ID
import { ElevenLabsClient, ElevenLabsError } from "@elevenlabs/elevenlabs-js";

const [base, key, voice] = process.argv.slice(2);
const client = new ElevenLabsClient({ apiKey: key, baseUrl: base, maxRetries: 0 });

const { data, rawResponse } = await client.textToSpeech
  .convert(voice, {
    text: "Hello from the official SDK.",
    modelId: "eleven_multilingual_v2",
    outputFormat: "mp3_44100_128",
    voiceSettings: { stability: 0.5, similarityBoost: 0.75 },
    seed: 42,
  })
  .withRawResponse();
const chunks = [];
for await (const chunk of data) chunks.push(Buffer.from(chunk));
const audio = Buffer.concat(chunks);

const models = await client.models.list();

let refused = null;
try {
  const bad = new ElevenLabsClient({ apiKey: "wrong-key", baseUrl: base, maxRetries: 0 });
  await bad.textToSpeech.convert(voice, { text: "x", modelId: "eleven_multilingual_v2" });
} catch (e) {
  if (!(e instanceof ElevenLabsError)) throw e;
  refused = { status: e.statusCode, detail: e.body?.detail?.status ?? null };
}

console.log(JSON.stringify({
  bytes: audio.length,
  head: audio.subarray(0, 3).toString("latin1"),
  contentType: rawResponse.headers.get("content-type"),
  requestId: rawResponse.headers.get("request-id"),
  characters: rawResponse.headers.get("x-character-count"),
  models: models.map((m) => m.modelId),
  refused,
}));
