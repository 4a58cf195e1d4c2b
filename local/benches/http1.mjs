// A bare HTTP/1.1 client for the serve benches: one kept-alive connection, requests written as
// they are and answers read as they come, so the figures hold the server's time and as little
// of a client's as can be. Node's `fetch` spends about 0.4 ms of its own on every request on
// this project's two-core machines, as much as the server being measured.

import { connect } from "node:net";

/** A connection to `url`; `post(body, headers)` resolves to `{ status, headers, body }`. */
export async function http1(url) {
  const { hostname, port, pathname } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port), noDelay: true });
  await new Promise((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  let buffer = Buffer.alloc(0);
  let waiting = null;
  socket.on("data", (chunk) => {
    buffer = Buffer.concat([buffer, chunk]);
    if (!waiting) return;
    const answer = parse(buffer);
    if (answer) {
      buffer = buffer.subarray(answer.length);
      const resolve = waiting;
      waiting = null;
      resolve(answer);
    }
  });
  return {
    post(body, headers) {
      const text = typeof body === "string" ? body : JSON.stringify(body);
      const lines = [`POST ${pathname} HTTP/1.1`, `Host: ${hostname}:${port}`, `Content-Length: ${Buffer.byteLength(text)}`];
      for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
      const answered = new Promise((resolve) => (waiting = resolve));
      socket.write(lines.join("\r\n") + "\r\n\r\n" + text);
      return answered;
    },
    close() {
      socket.destroy();
    },
  };
}

/** One whole response at the start of `buffer`, or null while it is still coming. */
function parse(buffer) {
  const end = buffer.indexOf("\r\n\r\n");
  if (end < 0) return null;
  const [statusLine, ...headerLines] = buffer.subarray(0, end).toString("latin1").split("\r\n");
  const headers = {};
  for (const line of headerLines) {
    const at = line.indexOf(":");
    headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
  }
  const status = Number(statusLine.split(" ")[1]);
  let at = end + 4;
  if (headers["content-length"] !== undefined) {
    const length = Number(headers["content-length"]);
    if (buffer.length < at + length) return null;
    return { status, headers, body: buffer.subarray(at, at + length).toString("utf8"), length: at + length };
  }
  if ((headers["transfer-encoding"] ?? "").includes("chunked")) {
    const parts = [];
    for (;;) {
      const lineEnd = buffer.indexOf("\r\n", at);
      if (lineEnd < 0) return null;
      const size = parseInt(buffer.subarray(at, lineEnd).toString("latin1"), 16);
      if (buffer.length < lineEnd + 2 + size + 2) return null;
      if (size === 0) return { status, headers, body: Buffer.concat(parts).toString("utf8"), length: lineEnd + 4 };
      parts.push(buffer.subarray(lineEnd + 2, lineEnd + 2 + size));
      at = lineEnd + 2 + size + 2;
    }
  }
  return { status, headers, body: "", length: at };
}
