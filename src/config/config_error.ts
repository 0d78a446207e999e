/** A configuration problem found at start-up. The message always names the key at fault. */
export class ConfigError extends Error {
  override name = "ConfigError";
  /** `[section] key` of the offending key, or the section or variable when no key applies. */
  readonly key: string;

  constructor(key: string, problem: string) {
    super(`Cannot load config: ${key}: ${problem}`);
    this.key = key;
  }
}
