import { isIP } from 'node:net';
import type { IncomingMessage } from 'node:http';
import { ConfigError } from '../core/errors/config-error.ts';
import { checkHost, checkLocalHost, type HostRefusal, localHosts } from '../http/local-host-check.ts';

/**
 * Which `Host` values the emulator's listeners answer. Every listener (control and provider) is a local
 * server that a page of another site can reach under a name of its own (DNS rebinding), so each checks
 * the request's `Host`: on a loopback bind (the default) only `127.0.0.1:<port>` and `localhost:<port>`,
 * as the visualizer and `/metrics` do. Bound to another address (`0.0.0.0` so that other containers
 * reach it as `http://llm-emulator:8701`), the names clients use are the user's to say: the loopback
 * names, the bound address itself and the `allowedHosts` given, with any port (a published container
 * port may differ from the one listened on). A request with two `Host` headers gets 400 either way.
 */

/** Where the emulator listens and which names it answers to. */
export interface EmulatorHostPolicy {
  /** The address passed to `listen`. */
  readonly bind: string;
  /** The host written in the emulator's URLs: a wildcard bind is reached locally on 127.0.0.1. */
  readonly urlHost: string;
  /** `undefined` when a request to the listener on `port` may be served. */
  check(req: IncomingMessage, port: number): HostRefusal | undefined;
}

const SOURCE = 'emulator options';
const WILDCARDS = new Set(['0.0.0.0', '::']);
const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];
/** A DNS name or IPv4 literal (letters, digits, dots, hyphens), or a bracketed IPv6 literal; no port. */
const HOST_NAME = /^(?:[a-z0-9](?:[a-z0-9-]{0,62})(?:\.[a-z0-9](?:[a-z0-9-]{0,62}))*|\[[0-9a-f:.]+\])$/;

/** True for an address that only this machine reaches: `localhost`, `127.x.x.x`, `::1`. */
export function isLoopbackAddress(address: string): boolean {
  const a = address.toLowerCase();
  return a === 'localhost' || a === '::1' || (isIP(a) === 4 && a.startsWith('127.'));
}

/** The name part of a `Host` value (`name:port`, `[v6]:port` or either without a port), lower-case. */
function hostName(value: string): string {
  if (value.startsWith('[')) return value.slice(0, value.indexOf(']') + 1);
  const colon = value.lastIndexOf(':');
  return colon === -1 ? value : value.slice(0, colon);
}

function normalizeAllowed(allowedHosts: readonly string[]): string[] {
  return allowedHosts.map((raw, i) => {
    const name = typeof raw === 'string' ? raw.trim().toLowerCase() : '';
    if (!HOST_NAME.test(name))
      throw new ConfigError({
        source: SOURCE,
        path: `allowedHosts[${i}]`,
        message: `must be a host name without a port (such as llm-emulator or 10.0.0.5); got ${JSON.stringify(raw)}`,
      });
    return name;
  });
}

/**
 * Resolves the bind address and allowed names into the check every emulator listener runs.
 *
 * @throws {ConfigError} for an empty bind address, a malformed allowed host, or allowed hosts on a
 *   loopback bind (only this machine reaches it, under its loopback names)
 * @example
 * ```ts
 * const policy = emulatorHostPolicy('0.0.0.0', ['llm-emulator']);
 * policy.urlHost; // '127.0.0.1'
 * ```
 */
export function emulatorHostPolicy(
  host = '127.0.0.1',
  allowedHosts: readonly string[] = [],
): EmulatorHostPolicy {
  if (typeof host !== 'string' || !host.trim())
    throw new ConfigError({
      source: SOURCE,
      path: 'host',
      message: 'must be a non-empty address such as 0.0.0.0',
    });
  const bind = host.trim();
  const allowed = normalizeAllowed(allowedHosts);
  const urlHost = WILDCARDS.has(bind) ? '127.0.0.1' : isIP(bind) === 6 ? `[${bind}]` : bind;
  if (isLoopbackAddress(bind)) {
    if (allowed.length > 0)
      throw new ConfigError({
        source: SOURCE,
        path: 'allowedHosts',
        message: `applies only to a non-loopback bind; on ${bind} only 127.0.0.1 and localhost are answered (listen on 0.0.0.0 to be reached under other names)`,
      });
    if (bind === '127.0.0.1' || bind === 'localhost')
      return { bind, urlHost, check: (req, port) => checkLocalHost(req, port) };
    // Another loopback address (127.0.0.2, ::1): its own literal is what local clients send.
    return {
      bind,
      urlHost,
      check: (req, port) => {
        const own = new Set([...localHosts(port), `${urlHost.toLowerCase()}:${port}`]);
        return checkHost(
          req,
          (value) => own.has(value),
          `the Host header is not ${urlHost} or localhost on this port; open http://${urlHost}:${port}/`,
        );
      },
    };
  }
  const names = new Set([...LOOPBACK_NAMES, ...allowed]);
  if (!WILDCARDS.has(bind)) names.add(urlHost.toLowerCase());
  const message = `the Host header is not a name of this emulator (${[...names].join(', ')}); add the name to allowedHosts (--allowed-hosts) to be reached under it`;
  return { bind, urlHost, check: (req) => checkHost(req, (value) => names.has(hostName(value)), message) };
}
