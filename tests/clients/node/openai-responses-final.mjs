// openai (Node): responses.stream(…) iterated, then finalResponse().
import OpenAI from "openai";
import { run, watchedFetch } from "./lib.mjs";

await run(async ({ baseURL, apiKey, model, prompt, idleTimeoutMs }) => {
  const transport = watchedFetch(idleTimeoutMs);
  const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, fetch: transport.fetch });
  const stream = client.responses.stream({ model, input: prompt });
  const events = [];
  for await (const event of stream) {
    events.push({ type: event.type, sequence_number: event.sequence_number, delta: event.delta });
  }
  const response = await stream.finalResponse();
  return { events, response, transport: transport.stats };
});
