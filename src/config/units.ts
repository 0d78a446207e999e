/**
 * Human units for sizes and durations, as config.toml writes them ("1 MiB", "90 s"; docs/CONFIG.md,
 * "Values"). A bare number means bytes for sizes and milliseconds for durations. Parsers return
 * null on bad input so callers can name the key in their own error.
 */

const byteUnits: Record<string, number> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
};

const durationUnitsMs: Record<string, number> = {
  ms: 1,
  s: 1000,
  sec: 1000,
  m: 60_000,
  min: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

const quantityPattern = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/;

/** Parses "4 GiB", "512KiB", "1000" (bytes); returns a whole number of bytes or null. */
export function parseBytes(input: string | number): number | null {
  if (typeof input === "number") return Number.isSafeInteger(input) && input >= 0 ? input : null;
  const match = quantityPattern.exec(input);
  if (!match) return null;
  const unit = match[2]!.toLowerCase();
  const factor = unit === "" ? 1 : byteUnits[unit];
  if (factor === undefined) return null;
  const bytes = Number(match[1]) * factor;
  return Number.isSafeInteger(bytes) ? bytes : null;
}

/** Parses "90 s", "10 ms", "1 d", "250" (milliseconds); returns whole milliseconds or null. */
export function parseDurationMs(input: string | number): number | null {
  if (typeof input === "number") return Number.isSafeInteger(input) && input >= 0 ? input : null;
  const match = quantityPattern.exec(input);
  if (!match) return null;
  const unit = match[2]!.toLowerCase();
  const factor = unit === "" ? 1 : durationUnitsMs[unit];
  if (factor === undefined) return null;
  const ms = Number(match[1]) * factor;
  return Number.isSafeInteger(ms) ? ms : null;
}

/** "1 MiB", "1.5 GiB", "17 B": for messages and docs. */
export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1 && value % 1024 === 0) {
    value /= 1024;
    unit++;
  }
  return `${value} ${units[unit]}`;
}

/** "10 ms", "90 s", "5 m": for messages and docs. */
export function formatDurationMs(ms: number): string {
  for (const [unit, factor] of [["d", 86_400_000], ["h", 3_600_000], ["m", 60_000], ["s", 1000]] as const) {
    if (ms >= factor && ms % factor === 0) return `${ms / factor} ${unit}`;
  }
  return `${ms} ms`;
}
