// openai (Node): chat.completions.stream(…).finalChatCompletion(), plus what the runner's events saw.
import OpenAI from "openai";
import { run, watchedFetch } from "./lib.mjs";

await run(async ({ baseURL, apiKey, model, prompt, idleTimeoutMs }) => {
  const transport = watchedFetch(idleTimeoutMs);
  const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, fetch: transport.fetch });
  const runner = client.chat.completions.stream({ model, messages: [{ role: "user", content: prompt }] });
  let chunkEvents = 0;
  const contentDeltas = [];
  runner.on("chunk", () => {
    chunkEvents += 1;
  });
  runner.on("content", (delta) => contentDeltas.push(delta));
  const completion = await runner.finalChatCompletion();
  return { completion, chunkEvents, contentDeltas, transport: transport.stats };
});
