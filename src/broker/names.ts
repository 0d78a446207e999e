import { InvalidNameError } from "./broker_errors.ts";

/** Stream, topic and consumer names: never "." or "..", never a path separator. */
export const namePattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/;

/** The name, checked; `kind` ("stream", "topic", "consumer") names it in the refusal. */
export function checkName(kind: string, value: unknown): string {
  if (typeof value !== "string" || !namePattern.test(value)) {
    throw new InvalidNameError(
      `Cannot use ${kind} name ${
        JSON.stringify(value)
      }: names are 1 to 255 characters of A-Z a-z 0-9 . _ - starting with a letter or digit`,
    );
  }
  return value;
}
