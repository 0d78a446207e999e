export type LogLevel = "debug" | "info" | "warn" | "error";

const levelRank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export const logLevels = Object.keys(levelRank) as LogLevel[];

/** Field names whose values are never printed, whatever they hold. */
const secretKeyPattern = /secret|password|token|authorization|credential|access_?key/i;

const redacted = "[redacted]";

export interface LoggerOptions {
  level: LogLevel;
  /** Where finished lines go; the default writes to standard error. */
  sink?: (line: string) => void;
  /** Literal secret values scrubbed from every line, wherever they appear. */
  secrets?: readonly string[];
  /** Fields added to every line, e.g. `{ shard: "0" }`. */
  context?: Record<string, unknown>;
  /** Wall-clock source for the `ts` field; injected so tests are deterministic. */
  wallMs?: () => number;
}

/**
 * A leveled logger writing one JSON object per line. Secrets are kept out twice over: fields
 * whose names look secret are replaced, and the known secret values (object-store keys, bearer
 * tokens) are scrubbed from the finished line, so a secret that leaks into an error message is
 * still not printed.
 */
export class Logger {
  readonly level: LogLevel;
  readonly #sink: (line: string) => void;
  readonly #secrets: readonly string[];
  readonly #context: Record<string, unknown>;
  readonly #wallMs: () => number;

  constructor(options: LoggerOptions) {
    this.level = options.level;
    this.#sink = options.sink ?? ((line) => console.error(line));
    this.#secrets = (options.secrets ?? []).filter((s) => s.length >= 4);
    this.#context = options.context ?? {};
    this.#wallMs = options.wallMs ?? (() => Date.now());
  }

  /** A logger that adds `context` to every line and shares this one's sink and secrets. */
  child(context: Record<string, unknown>): Logger {
    return new Logger({
      level: this.level,
      sink: this.#sink,
      secrets: this.#secrets,
      context: { ...this.#context, ...context },
      wallMs: this.#wallMs,
    });
  }

  debug(message: string, fields?: Record<string, unknown>): void {
    this.#write("debug", message, fields);
  }

  info(message: string, fields?: Record<string, unknown>): void {
    this.#write("info", message, fields);
  }

  warn(message: string, fields?: Record<string, unknown>): void {
    this.#write("warn", message, fields);
  }

  error(message: string, fields?: Record<string, unknown>): void {
    this.#write("error", message, fields);
  }

  #write(level: LogLevel, message: string, fields?: Record<string, unknown>): void {
    if (levelRank[level] < levelRank[this.level]) return;
    const record = {
      ts: new Date(this.#wallMs()).toISOString(),
      level,
      msg: message,
      ...this.#context,
      ...fields,
    };
    let line = JSON.stringify(record, (key, value) => sanitize(key, value));
    for (const secret of this.#secrets) line = line.split(secret).join(redacted);
    this.#sink(line);
  }
}

/** Bound on the causes a logged error lists: a chain longer than this (or a cycle) is cut. */
export const loggedCausesMax = 8;

/** An error as a log line holds it: each cause under it, and the stack of the first one raised. */
export interface LoggedError {
  name: string;
  message: string;
  /** The error's own code where it has one (a disk error's `not_found`, Node's `ENOENT`). */
  code?: string;
  /** The `cause` chain below this error, outermost first; the last is the first error raised. */
  causes?: LoggedCause[];
  /** The stack of the first error raised: the deepest `Error` of the chain, this one if none. */
  stack?: string;
}

export interface LoggedCause {
  name: string;
  message: string;
  code?: string;
}

function causeOf(value: unknown): LoggedCause {
  if (!(value instanceof Error)) return { name: typeof value, message: String(value) };
  const code = (value as { code?: unknown }).code;
  return { name: value.name, message: value.message, ...(typeof code === "string" ? { code } : {}) };
}

/**
 * What a log line says of `error`: its name, message and code, the whole chain of causes below it,
 * each by name, message and code (at most `loggedCausesMax`), and the stack of the first error
 * raised, the deepest `Error` of the chain, which shows where the failure began.
 */
export function loggedError(error: Error): LoggedError {
  const causes: LoggedCause[] = [];
  const seen = new Set<unknown>([error]);
  let first: Error = error;
  let cause: unknown = error.cause;
  while (cause !== undefined && !seen.has(cause) && causes.length < loggedCausesMax) {
    seen.add(cause);
    causes.push(causeOf(cause));
    if (cause instanceof Error) first = cause;
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  return {
    ...causeOf(error),
    ...(causes.length > 0 ? { causes } : {}),
    ...(first.stack !== undefined ? { stack: first.stack } : {}),
  };
}

function sanitize(key: string, value: unknown): unknown {
  if (key !== "" && secretKeyPattern.test(key) && value !== undefined && value !== "") {
    return redacted;
  }
  if (value instanceof Error) return loggedError(value);
  if (typeof value === "bigint") return value.toString();
  return value;
}

/** A logger that drops everything, for tests that do not look at logs. */
export function silentLogger(): Logger {
  return new Logger({ level: "error", sink: () => {} });
}
