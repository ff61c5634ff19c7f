/**
 * failureBucketOf (src/server/client-address.ts): the addresses whose failed authentications share
 * one bucket. IPv4 as it is, IPv4-mapped IPv6 as its IPv4 address, IPv6 by its /64 network in
 * every spelling of it.
 */
import { expect, it } from 'vitest';

import { failureBucketOf } from '../../src/server/client-address.js';

it('IPv4 is its own bucket, also IPv4-mapped', () => {
  expect(failureBucketOf('192.0.2.1')).toBe('192.0.2.1');
  expect(failureBucketOf('::ffff:192.0.2.1')).toBe('192.0.2.1');
  expect(failureBucketOf('::FFFF:192.0.2.1')).toBe('192.0.2.1');
  expect(failureBucketOf('192.0.2.2')).not.toBe(failureBucketOf('192.0.2.1'));
});

it('IPv6 addresses of one /64 share a bucket, however written; another /64 is another', () => {
  const one = ['2001:db8:1:2::1', '2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:0DB8:0001:0002:aaaa:0:0:1', '2001:db8:1:2:0:0:192.0.2.1', 'fe80::1%eth0'.replace('fe80::', '2001:db8:1:2::')];
  for (const address of one) expect(failureBucketOf(address), address).toBe('2001:db8:1:2::/64');
  expect(failureBucketOf('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
  expect(failureBucketOf('::1')).toBe('0:0:0:0::/64');
  expect(failureBucketOf('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
});
