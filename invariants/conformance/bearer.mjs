// Loaded into the conformance suite's Node process (`node --import`): the suite has no flag for
// request headers, so this adds `Authorization: Bearer $CONFORMANCE_BEARER` to every HTTP request
// it sends to $CONFORMANCE_ORIGIN, the hub under test — as a configured client would. Nothing
// else changes: Host, Origin and bodies reach the hub exactly as the suite wrote them, so the
// hub's Host and Origin checks run on them unchanged. Both Node's fetch (the SDK's transport)
// and undici's `request` (the raw-HTTP scenarios) go through undici's global dispatcher.
import { createRequire } from 'node:module';

const require = createRequire(process.env.CONFORMANCE_UNDICI);
const { Agent, setGlobalDispatcher } = require('undici');

const token = process.env.CONFORMANCE_BEARER;
const target = new URL(process.env.CONFORMANCE_ORIGIN).origin;
if (!token) throw new Error('CONFORMANCE_BEARER is not set');

function withToken(headers) {
  const value = `Bearer ${token}`;
  if (headers == null) return { authorization: value };
  if (Array.isArray(headers)) {
    if (headers.length > 0 && Array.isArray(headers[0])) return [...headers, ['authorization', value]];
    return [...headers, 'authorization', value];
  }
  if (typeof headers[Symbol.iterator] === 'function') return [...headers, ['authorization', value]];
  return { ...headers, authorization: value };
}

const agent = new Agent().compose((dispatch) => (options, handler) => {
  const origin = options.origin ? new URL(String(options.origin)).origin : '';
  if (origin === target) options = { ...options, headers: withToken(options.headers) };
  return dispatch(options, handler);
});
setGlobalDispatcher(agent);
