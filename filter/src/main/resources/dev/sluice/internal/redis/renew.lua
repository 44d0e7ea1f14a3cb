--[[
renew.lua: renews the leases of concurrency slots whose requests still run (RedisEngine.renew;
Concurrency.renew is its definition): one call for every slot due on a node, or one per slot on a
Redis Cluster (their keys live in different slots).

KEYS[i]   the key of the i-th slot's rule and client: <key-prefix>{<rule>:<client key>}:slots
ARGV[1]   little-endian binary: '<d' now in ms since the epoch (negative: read the server's TIME,
          clock=redis), then per key '<dc8': the rule's lease in ms, the token the slot is held under
Returns   a string of one byte per key: 1 where the slot was still held (its lease ends after now)
          and its lease now ends a lease from now (never earlier than it did), 0 where it was not: a
          lease that has ended may have been counted free already, so it is not brought back
]]
local decode, format = struct.unpack, string.format
local MARGIN = 1000 -- RateAlgorithm.EXPIRY_MARGIN_MS
local now, pos = decode('<d', ARGV[1])
if now < 0 then
  local t = redis.call('TIME')
  local us = t[2] + 0
  now = t[1] * 1000 + (us - us % 1000) / 1000
end
local held = {}
for i = 1, #KEYS do
  local lease, token
  lease, token, pos = decode('<dc8', ARGV[1], pos)
  local key = KEYS[i]
  local ends = redis.pcall('ZSCORE', key, token)
  held[i] = 0
  if type(ends) == 'string' and ends + 0 > now then
    held[i] = 1
    if now + lease > ends + 0 then
      redis.call('ZADD', key, format('%d', now + lease), token)
      if redis.call('PTTL', key) < lease + MARGIN then
        redis.call('PEXPIRE', key, format('%d', lease + MARGIN))
      end
    end
  end
end
return string.char(unpack(held))
