import { InvalidNameError } from "../broker_errors.ts";

/** Stream and consumer names: never "." or "..", never a path separator. */
export const namePattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/;

/** Topic names, as Kafka has them: 1 to 249 of A-Z a-z 0-9 . _ -, and neither "." nor "..". */
export const topicNamePattern = /^(?!\.\.?$)[A-Za-z0-9._-]{1,249}$/;

/** The name, checked; `kind` ("stream", "consumer") names it in the refusal. */
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

/**
 * The topic name, checked. Directories and object keys hold ids, never names, so a name that
 * starts with a dot or an underscore is as safe as any other.
 */
export function checkTopicName(value: unknown): string {
  if (typeof value !== "string" || !topicNamePattern.test(value)) {
    throw new InvalidNameError(
      `Cannot use topic name ${
        JSON.stringify(value)
      }: topic names are 1 to 249 characters of A-Z a-z 0-9 . _ -, and neither "." nor ".."`,
    );
  }
  return value;
}
