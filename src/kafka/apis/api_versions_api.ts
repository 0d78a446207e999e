import { encodeApiVersionsResponse, readApiVersionsRequest } from "./api_versions_codec.ts";
import type { KafkaApi } from "../kafka_api.ts";
import { apiKey } from "../wire/frame_codec.ts";

/** ApiVersions 0 to 3: the ranges of every API served; a newer version is answered in v0. */
export const apiVersionsApi: KafkaApi = {
  apiKey: apiKey.apiVersions,
  name: "api_versions",
  minVersion: 0,
  maxVersion: 3,
  handle(header, body, serving) {
    const served = header.apiVersion <= 3;
    if (served) readApiVersionsRequest(header.apiVersion, body);
    const bytes = encodeApiVersionsResponse(header, serving.ranges);
    return Promise.resolve({ pieces: [bytes], errorCount: served ? 0 : 1 });
  },
};
