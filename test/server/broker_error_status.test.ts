import t from "tap";
import {
  AlreadyExistsError,
  ConsumerLimitError,
  InvalidNameError,
  InvalidTopicOptionError,
  RemoteDataError,
  RemoteSegmentsExistError,
  ResourceNotFoundError,
  TieringDisabledError,
  UnavailableError,
} from "../../src/broker/broker_errors.ts";
import { ApiError, badRequest, conflict, notFound, unavailable } from "../../src/server/api_errors.ts";
import { apiErrorOf } from "../../src/server/broker_error_status.ts";

t.test("each broker refusal answers with its status, code and retry-after, and its own message", (t) => {
  const cases: [Error, number, string, string | null][] = [
    [new InvalidNameError("m"), 400, "invalid_name", null],
    [new InvalidTopicOptionError("m"), 400, "invalid_option", null],
    [new TieringDisabledError("m"), 400, "tiering_disabled", null],
    [new ResourceNotFoundError("m"), 404, "not_found", null],
    [new AlreadyExistsError("m"), 409, "already_exists", null],
    [new RemoteSegmentsExistError("m"), 409, "remote_segments_exist", null],
    [new ConsumerLimitError("m"), 409, "limit_exceeded", null],
    [new UnavailableError("overloaded", "m"), 503, "overloaded", "1"],
    [new UnavailableError("partition_unavailable", "m"), 503, "partition_unavailable", "30"],
    [new UnavailableError("remote_read_unavailable", "m"), 503, "remote_read_unavailable", "30"],
    [new UnavailableError("transient", "m"), 503, "transient", "1"],
    [new RemoteDataError("missing", "m"), 502, "remote_data_missing", null],
    [new RemoteDataError("corrupt", "m"), 502, "remote_data_corrupt", null],
  ];
  for (const [error, status, code, retryAfter] of cases) {
    const api = apiErrorOf(error);
    t.ok(api instanceof ApiError, error.name);
    t.same(
      {
        status: api!.status,
        code: api!.code,
        message: api!.message,
        retryAfter: api!.headers["retry-after"] ?? null,
      },
      { status, code, message: "m", retryAfter },
      `${error.name} ${code}`,
    );
    t.equal(api!.cause, error, `${error.name} ${code}: the refusal is its cause`);
  }
  const own = new ApiError(408, "timeout", "m");
  t.equal(apiErrorOf(own), own, "an API error is its own answer");
  t.equal(apiErrorOf(new Error("bug")), null, "anything else is the server's fault");
  t.equal(apiErrorOf("thrown string"), null);
  t.end();
});

t.test("an API error keeps the cause it is given, and its message and headers are its own", (t) => {
  const cause = new Error("Cannot sign request: secret AKIA-NOT-FOR-BODIES");
  const made = [
    new ApiError(408, "timeout", "m", {}, { cause }),
    badRequest("malformed_body", "m", { cause }),
    notFound("m", { cause }),
    conflict("already_exists", "m", { cause }),
    unavailable("transient", "m", 7, { cause }),
  ];
  for (const api of made) {
    t.equal(api.cause, cause, `${api.code}: the cause is kept`);
    t.equal(api.message, "m", `${api.code}: the message is unchanged`);
  }
  t.same(made[4]!.headers, { "retry-after": "7" });
  t.notOk("cause" in new ApiError(400, "c", "m"), "without one, no cause");
  t.end();
});
