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

function sanitize(key: string, value: unknown): unknown {
  if (key !== "" && secretKeyPattern.test(key) && value !== undefined && value !== "") {
    return redacted;
  }
  if (value instanceof Error) return { name: value.name, message: value.message };
  if (typeof value === "bigint") return value.toString();
  return value;
}

/** A logger that drops everything, for tests that do not look at logs. */
export function silentLogger(): Logger {
  return new Logger({ level: "error", sink: () => {} });
}
