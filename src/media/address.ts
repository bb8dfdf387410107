/**
 * Which network addresses a media URL may reach. Anything but a public unicast address (loopback,
 * private, link-local, carrier-grade NAT, multicast, documentation and other reserved ranges, and
 * IPv6 forms that embed such an IPv4 address) is private unless MEDIA_ALLOW_PRIVATE_URLS is on.
 */
import ipaddr from 'ipaddr.js';

export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  // process() turns IPv4-mapped IPv6 (::ffff:127.0.0.1) into the IPv4 address it carries.
  return ipaddr.process(address).range() === 'unicast';
}

/** The address when `hostname` is an IP literal (URL brackets removed), else undefined. */
export function ipLiteral(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) ? bare : undefined;
}
