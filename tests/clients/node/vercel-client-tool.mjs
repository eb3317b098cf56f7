// Vercel AI SDK agent loop with a client tool (WIRE.md §15.2, W-15.2/W-15.3): `generateText` or `streamText`
// (HERMES_MODE=generate|stream) with @ai-sdk/openai-compatible (Chat Completions; HERMES_PROVIDER=responses:
// @ai-sdk/openai `.responses()`, the Responses API), one tool `get_weather(city)`
// whose `execute` counts its calls and returns "$HERMES_WEATHER in <city>", and
// `stopWhen: stepCountIs(HERMES_MAX_STEPS, default 5)`. Prints the steps, the tool's calls and the stream parts.
import { generateText, jsonSchema, stepCountIs, streamText, tool } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { plainPart, run, settled, watchedFetch } from "./lib.mjs";

const WEATHER = process.env.HERMES_WEATHER || "sunny, 24 C";

await run(async ({ baseURL, apiKey, model, prompt }) => {
  const transport = watchedFetch(0);
  const languageModel =
    process.env.HERMES_PROVIDER === "responses"
      ? createOpenAI({ baseURL, apiKey, fetch: transport.fetch }).responses(model)
      : createOpenAICompatible({ name: "hermes", baseURL, apiKey, fetch: transport.fetch })(model);
  const executed = [];
  const getWeather = tool({
    description: "The weather in a city",
    inputSchema: jsonSchema({
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
      additionalProperties: false,
    }),
    execute: async ({ city }) => {
      executed.push(city);
      return `${WEATHER} in ${city}`;
    },
  });
  const options = {
    model: languageModel,
    prompt,
    tools: { get_weather: getWeather },
    stopWhen: stepCountIs(Number(process.env.HERMES_MAX_STEPS || 5)),
    maxRetries: 0,
  };
  const summary = (steps) =>
    steps.map((step) => ({
      finishReason: step.finishReason,
      text: step.text,
      toolCalls: step.toolCalls.map((c) => ({
        toolName: c.toolName,
        input: c.input,
        toolCallId: c.toolCallId,
        providerExecuted: c.providerExecuted ?? false,
      })),
      toolResults: step.toolResults.map((r) => ({
        toolName: r.toolName,
        output: r.output,
        providerExecuted: r.providerExecuted ?? false,
      })),
    }));
  if (process.env.HERMES_MODE === "stream") {
    const result = streamText({ ...options, onError: () => {} });
    const parts = [];
    for await (const part of result.fullStream) parts.push(plainPart(part));
    return {
      parts,
      text: await settled(result.text),
      finishReason: await settled(result.finishReason),
      steps: summary(await result.steps),
      executed,
      transport: transport.stats,
    };
  }
  const result = await generateText(options);
  return {
    text: result.text,
    finishReason: result.finishReason,
    steps: summary(result.steps),
    executed,
    transport: transport.stats,
  };
});
