// Shared by the scenario scripts: configuration from the environment, a fetch that watches the
// response bytes (keepalive comments, longest silence, idle timeout), and the one JSON result line.
//
// Environment: HERMES_BASE_URL (…/v1), HERMES_API_KEY, HERMES_MODEL (default hermes-agent),
// HERMES_PROMPT (default "use tool"), HERMES_IDLE_TIMEOUT_MS (default 0 = none: abort a response
// body that stays silent that long, as a strict proxy or client would).

export function config() {
  const baseURL = process.env.HERMES_BASE_URL;
  const apiKey = process.env.HERMES_API_KEY;
  if (!baseURL || !apiKey) {
    throw new Error("HERMES_BASE_URL and HERMES_API_KEY are required");
  }
  return {
    baseURL,
    apiKey,
    model: process.env.HERMES_MODEL || "hermes-agent",
    prompt: process.env.HERMES_PROMPT || "use tool",
    idleTimeoutMs: Number(process.env.HERMES_IDLE_TIMEOUT_MS || 0),
  };
}

const KEEPALIVE = ": keepalive\n\n";

/** A fetch for the SDKs' `fetch` option that records what the transport saw. */
export function watchedFetch(idleTimeoutMs) {
  const stats = { responses: 0, bytes: 0, keepalives: 0, maxIdleMs: 0, idleTimeouts: 0 };
  let text = "";
  const decoder = new TextDecoder();
  const watched = async (input, init) => {
    const response = await fetch(input, init);
    stats.responses += 1;
    if (!response.body) return response;
    let last = Date.now();
    let timer = null;
    let arm = () => {};
    const body = response.body.pipeThrough(
      new TransformStream({
        start(controller) {
          arm = () => {
            if (!idleTimeoutMs) return;
            clearTimeout(timer);
            timer = setTimeout(() => {
              stats.idleTimeouts += 1;
              controller.error(new Error(`idle timeout: no bytes for ${idleTimeoutMs} ms`));
            }, idleTimeoutMs);
          };
          arm();
        },
        transform(chunk, controller) {
          const now = Date.now();
          stats.maxIdleMs = Math.max(stats.maxIdleMs, now - last);
          last = now;
          stats.bytes += chunk.byteLength;
          text += decoder.decode(chunk, { stream: true });
          stats.keepalives = text.split(KEEPALIVE).length - 1;
          arm();
          controller.enqueue(chunk);
        },
        flush() {
          clearTimeout(timer);
        },
      }),
    );
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
  return { fetch: watched, stats };
}

function plainError(error) {
  if (error === undefined || error === null) return error;
  if (typeof error !== "object") return String(error);
  return {
    name: error.name,
    message: error.message ?? String(error),
    status: error.status ?? error.statusCode,
    code: error.code,
  };
}

/** A Vercel stream part reduced to JSON (errors become {name, message}). */
export function plainPart(part) {
  const out = {};
  for (const [key, value] of Object.entries(part)) {
    if (key === "error") out.error = plainError(value);
    else if (key === "rawValue" || key === "request" || key === "response") continue;
    else out[key] = value;
  }
  return out;
}

/** Run a scenario and print exactly one JSON line: {"ok":true,…} or {"ok":false,"error":…}. */
export async function run(scenario) {
  const started = Date.now();
  let result;
  try {
    result = { ok: true, ...(await scenario(config())) };
  } catch (error) {
    result = { ok: false, error: plainError(error), stack: String(error?.stack ?? "") };
  }
  result.node = process.version;
  result.elapsedMs = Date.now() - started;
  process.stdout.write(JSON.stringify(result) + "\n");
  process.exitCode = result.ok ? 0 : 1;
}

/** Await a promise of the SDK; a rejection becomes {"rejected": error} instead of ending the run. */
export async function settled(promise) {
  try {
    return await promise;
  } catch (error) {
    return { rejected: plainError(error) };
  }
}
