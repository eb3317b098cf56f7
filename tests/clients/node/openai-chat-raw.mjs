// openai (Node): chat.completions.create({stream: true}) iterated raw; every chunk is returned.
import OpenAI from "openai";
import { run, watchedFetch } from "./lib.mjs";

await run(async ({ baseURL, apiKey, model, prompt, idleTimeoutMs }) => {
  const transport = watchedFetch(idleTimeoutMs);
  const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, fetch: transport.fetch });
  const stream = await client.chat.completions.create({
    model,
    stream: true,
    messages: [{ role: "user", content: prompt }],
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return { chunks, transport: transport.stats };
});
