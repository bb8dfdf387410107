/**
 * Which network addresses a server-side request (a media URL, a webhook) may reach. Only public
 * unicast addresses pass: IPv4 outside loopback, private, link-local, carrier-grade NAT, multicast,
 * documentation and other reserved ranges; IPv6 only inside global unicast (2000::/3). An IPv6
 * address that carries an IPv4 address (mapped ::ffff:a.b.c.d, compatible ::a.b.c.d, 6to4
 * 2002:AABB:CCDD::, NAT64 64:ff9b::a.b.c.d) is judged by that IPv4 address; Teredo and the other
 * tunnelling ranges never pass. Everything else is private unless a setting allows private targets.
 */
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
