/**
 * A configuration problem found at start-up. The message always names the key at fault; an error it
 * was found through (a TOML parse error, a refused allocation) is its `cause`.
 */
export class ConfigError extends Error {
  override name = "ConfigError";
  /** `[section] key` of the offending key, or the section or variable when no key applies. */
  readonly key: string;

  constructor(key: string, problem: string, options?: ErrorOptions) {
    super(`Cannot load config: ${key}: ${problem}`, options);
    this.key = key;
  }
}
