// Vercel AI SDK: streamText with @ai-sdk/openai `.responses()` (Responses API), default options.
// HERMES_MAX_STEPS=n sets `stopWhen: stepCountIs(n)` (an agent loop; the default is one step).
// HERMES_TOOL_ITEMS=off adds the X-Hermes-Tool-Items: off header (no server tool items in the stream).
// HERMES_FOLLOW_UP=text runs a second turn the way a chat app does: the first turn's `response.messages`
// (the server's tool calls and the SDK's tool errors included) appended to the history, then that user text.
import { stepCountIs, streamText } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { plainPart, run, settled, watchedFetch } from "./lib.mjs";

async function turn(provider, model, messages, maxSteps) {
  const result = streamText({
    model: provider.responses(model),
    messages,
    maxRetries: 0,
    onError: () => {},
    ...(maxSteps ? { stopWhen: stepCountIs(maxSteps) } : {}),
  });
  const parts = [];
  for await (const part of result.fullStream) parts.push(plainPart(part));
  const response = await settled(result.response);
  return {
    parts,
    text: await settled(result.text),
    reasoningText: await settled(result.reasoningText),
    finishReason: await settled(result.finishReason),
    usage: await settled(result.usage),
    steps: (await settled(result.steps))?.length,
    // What an app appends to its history for the next turn (the server's tool calls included).
    responseMessages: response?.messages,
  };
}

await run(async ({ baseURL, apiKey, model, prompt, idleTimeoutMs }) => {
  const transport = watchedFetch(idleTimeoutMs);
  // HERMES_TOOL_ITEMS=off sends `X-Hermes-Tool-Items: off`: the server leaves its tool items out.
  const headers = process.env.HERMES_TOOL_ITEMS ? { "X-Hermes-Tool-Items": process.env.HERMES_TOOL_ITEMS } : undefined;
  const provider = createOpenAI({ baseURL, apiKey, fetch: transport.fetch, headers });
  const maxSteps = Number(process.env.HERMES_MAX_STEPS || 0);
  const history = [{ role: "user", content: prompt }];
  const result = await turn(provider, model, history, maxSteps);
  const followUpText = process.env.HERMES_FOLLOW_UP;
  if (followUpText) {
    history.push(...(result.responseMessages ?? []), { role: "user", content: followUpText });
    result.followUp = await turn(provider, model, history, maxSteps);
  }
  return { ...result, transport: transport.stats };
});
