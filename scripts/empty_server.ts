/**
 * The HTTP ceiling for the produce benchmark: a `Deno.serve` handler that only reads the request
 * body and answers. POST answers a small JSON object, as a produce does; GET answers the body set
 * by the last PUT, so a consume against it moves exactly the bytes a real poll answer carries.
 * Prints `listening <port>` on stdout.
 */
let getBody = new Uint8Array(0);
let getType = "application/json";
const ack = new TextEncoder().encode(JSON.stringify({ partition: 0, base_offset: 0, count: 100 }));

const server = Deno.serve({
  hostname: "127.0.0.1",
  port: 0,
  onListen: ({ port }) => console.log(`listening ${port}`),
}, async (request) => {
  const body = new Uint8Array(await request.arrayBuffer());
  if (request.method === "PUT") {
    getBody = body;
    getType = request.headers.get("content-type") ?? getType;
    return new Response(null, { status: 204 });
  }
  if (request.method === "GET") return new Response(getBody, { headers: { "content-type": getType } });
  return new Response(ack, { headers: { "content-type": "application/json" } });
});

Deno.addSignalListener("SIGTERM", () => server.shutdown().then(() => Deno.exit(0)));
