// Vercel AI SDK: streamText with @ai-sdk/openai-compatible (Chat Completions).
import { streamText } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { plainPart, run, settled, watchedFetch } from "./lib.mjs";

await run(async ({ baseURL, apiKey, model, prompt, idleTimeoutMs }) => {
  const transport = watchedFetch(idleTimeoutMs);
  const provider = createOpenAICompatible({ name: "hermes", baseURL, apiKey, fetch: transport.fetch });
  const result = streamText({ model: provider(model), prompt, maxRetries: 0, onError: () => {} });
  const parts = [];
  for await (const part of result.fullStream) parts.push(plainPart(part));
  return {
    parts,
    text: await settled(result.text),
    reasoningText: await settled(result.reasoningText),
    finishReason: await settled(result.finishReason),
    usage: await settled(result.usage),
    transport: transport.stats,
  };
});
