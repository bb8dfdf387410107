/**
 * Which network addresses a server-side request (a media URL, a webhook) may reach. Only public
 * unicast addresses pass: IPv4 outside loopback, private, link-local, carrier-grade NAT, multicast,
 * documentation and other reserved ranges; IPv6 only inside global unicast (2000::/3). An IPv6
 * address that carries an IPv4 address (mapped ::ffff:a.b.c.d, compatible ::a.b.c.d, 6to4
 * 2002:AABB:CCDD::, NAT64 64:ff9b::a.b.c.d) is judged by that IPv4 address; Teredo and the other
 * tunnelling ranges never pass. Everything else is private unless a setting allows private targets.
 */
import dns from 'node:dns';
import type { LookupAddress, LookupOptions } from 'node:dns';
import ipaddr from 'ipaddr.js';

function isPublicIPv4(address: ipaddr.IPv4): boolean {
  return address.range() === 'unicast';
}

function ipv4FromBytes(bytes: number[]): ipaddr.IPv4 {
  return new ipaddr.IPv4(bytes.slice(0, 4));
}

function isPublicIPv6(address: ipaddr.IPv6): boolean {
  const bytes = address.toByteArray();
  // The first 96 bits zero: IPv4-compatible (::a.b.c.d), also :: and ::1 (judged as 0.0.0.0/0.0.0.1: refused).
  if (bytes.slice(0, 12).every((b) => b === 0)) return isPublicIPv4(ipv4FromBytes(bytes.slice(12)));
  if (address.isIPv4MappedAddress()) return isPublicIPv4(address.toIPv4Address());
  // NAT64 well-known prefix 64:ff9b::/96: the IPv4 address in the last 32 bits.
  if (address.match(ipaddr.IPv6.parse('64:ff9b::'), 96)) return isPublicIPv4(ipv4FromBytes(bytes.slice(12)));
  // 6to4 2002::/16: the IPv4 address in bits 16-47.
  if (address.match(ipaddr.IPv6.parse('2002::'), 16)) return isPublicIPv4(ipv4FromBytes(bytes.slice(2, 6)));
  // Global unicast only (2000::/3), without the special ranges inside it (Teredo, documentation, ...).
  if ((bytes[0]! & 0xe0) !== 0x20) return false;
  return address.range() === 'unicast';
}

export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.parse(address);
  return parsed.kind() === 'ipv4' ? isPublicIPv4(parsed as ipaddr.IPv4) : isPublicIPv6(parsed as ipaddr.IPv6);
}

/** The address when `hostname` is an IP literal (URL brackets removed), else undefined. */
export function ipLiteral(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) ? bare : undefined;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** Raised inside a connect-time lookup when a host name resolves to a non-public address. */
export class PrivateAddressError extends Error {
  constructor(
    readonly hostname: string,
    readonly address: string,
  ) {
    super(`${hostname} resolves to the non-public address ${address}`);
  }
}

export const systemResolve = (hostname: string): Promise<LookupAddress[]> => dns.promises.lookup(hostname, { all: true });

/**
 * A `lookup` for net.connect (undici's `connect.lookup`) that refuses a host name when any address
 * it resolves to is not public. The check runs on the very addresses the socket then uses, so a
 * name that answers public at one lookup and private at the next (DNS rebinding) cannot slip through.
 */
export function publicOnlyLookup(
  isPublic: (address: string) => boolean = isPublicAddress,
  resolve: (hostname: string) => Promise<LookupAddress[]> = systemResolve,
) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolve(hostname).then(
      (addresses) => {
        const refused = addresses.find((entry) => !isPublic(entry.address));
        if (refused) return callback(new PrivateAddressError(hostname, refused.address), []);
        const usable = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
        if (options.all) return callback(null, usable);
        const first = usable[0];
        if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
        return callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, []),
    );
  };
}

/**
 * Why `url` may not be the target of a server-side request, or undefined when it may: checks an IP
 * literal, and the addresses a host name resolves to now (a name that does not resolve yet passes:
 * the connect-time lookup checks again).
 */
export async function nonPublicTarget(
  url: URL,
  isPublic: (address: string) => boolean = isPublicAddress,
  resolve: (hostname: string) => Promise<LookupAddress[]> = systemResolve,
): Promise<string | undefined> {
  const literal = ipLiteral(url.hostname);
  if (literal) return isPublic(literal) ? undefined : `${url.hostname} is the non-public address ${literal}`;
  let addresses: LookupAddress[];
  try {
    addresses = await resolve(url.hostname);
  } catch {
    return undefined;
  }
  const refused = addresses.find((entry) => !isPublic(entry.address));
  return refused ? `${url.hostname} resolves to the non-public address ${refused.address}` : undefined;
}
