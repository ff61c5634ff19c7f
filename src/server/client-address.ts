/**
 * Which client addresses count as one when failed authentications are limited (auth.ts).
 */
import { isIPv6 } from 'node:net';

/**
 * The address whose failed authentications share one bucket: an IPv4 address itself (also when
 * it comes IPv4-mapped, `::ffff:192.0.2.1`); for IPv6 its /64 network, since one host is normally
 * given a whole /64 and could otherwise guess keys from each of its 2^64 addresses in turn.
 * @example failureBucketOf('2001:db8:1:2:aaaa::1') // '2001:db8:1:2::/64'
 * @example failureBucketOf('::ffff:192.0.2.1') // '192.0.2.1'
 */
export function failureBucketOf(address: string): string {
  if (!isIPv6(address)) return address;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  return `${hextets(address).slice(0, 4).join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address (`::` expanded, an embedded IPv4 tail as two groups), lower case, no leading zeros. */
function hextets(address: string): string[] {
  let text = address.toLowerCase().replace(/%.*$/, ''); // a zone index (fe80::1%eth0) is not part of the address
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const middle = tail === undefined ? [] : Array(8 - left.length - right.length).fill('0');
  return [...left, ...middle, ...right].map((h) => parseInt(h, 16).toString(16));
}
