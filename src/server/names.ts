import { badRequest } from "./api_errors.ts";

/** Stream, topic and consumer names: never "." or "..", never a path separator. */
export const namePattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/;

export function checkName(kind: string, value: unknown): string {
  if (typeof value !== "string" || !namePattern.test(value)) {
    throw badRequest(
      "invalid_name",
      `Cannot use ${kind} name ${
        JSON.stringify(value)
      }: names are 1 to 255 characters of A-Z a-z 0-9 . _ - starting with a letter or digit`,
    );
  }
  return value;
}
