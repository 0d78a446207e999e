/**
 * The shipped config.toml as a benchmark's server runs it: its data under `dataPath`, port 0 (a free
 * one), `max_open_files` and `fsync` when given. A `max_open_files` line the shipped config already has is
 * replaced; without one the key opens the `[system]` table. Any line to edit that is missing is an
 * error, never a config left as shipped.
 */
export function benchConfigText(
  shipped: string,
  dataPath: string,
  maxOpenFiles: number | null,
  fsync: "always" | "interval" | null = null,
): string {
  const edits: [RegExp, string][] = [
    [/^path = "\.\/data"$/m, `path = ${JSON.stringify(dataPath)}`],
    [/^address = "127\.0\.0\.1:8080"$/m, 'address = "127.0.0.1:0"'],
  ];
  if (fsync !== null) edits.push([/^fsync = "always"$/m, `fsync = "${fsync}"`]);
  if (maxOpenFiles !== null) {
    edits.push(
      /^max_open_files\s*=/m.test(shipped)
        ? [/^max_open_files\s*=.*$/m, `max_open_files = ${maxOpenFiles}`]
        : [/^\[system\]$/m, `[system]\nmax_open_files = ${maxOpenFiles}`],
    );
  }
  return edits.reduce((text, [pattern, line]) => {
    if (!pattern.test(text)) throw new Error(`Cannot write the config: config.toml has no line ${pattern}`);
    return text.replace(pattern, () => line);
  }, shipped);
}
