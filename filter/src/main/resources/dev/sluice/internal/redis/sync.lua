--[[
sync.lua: the approximate mode's exchange (dev.sluice.internal.approximate.ApproximateEngine, sent by
dev.sluice.internal.redis.SyncScript): once per sync interval, one call for many keys of one instance.
Adds what the instance counted since its last sync to each key's window and returns the fleet's counts.

KEYS[i]   the state key of a rule's client, <key-prefix>{<rule>:<client key>}: the key decide.lua keeps,
          in its format (fixed-window '<Bdd' 1, end, count; sliding-window-counter '<Bddd' 2, end,
          current, previous: end is when the current count's window ends), so that exact and
          approximate decisions count together; here a window is named by its start (end - window)
ARGV[1]   little-endian binary: struct '<d' now in ms since the epoch (negative: read the server's TIME,
          clock=redis); then per key '<Bdddd': algorithm (1 fixed-window, 2 sliding-window-counter),
          window ms, the start of the window the instance counts in, its count there, its count in the
          window before (sliding-window-counter only; 0 for fixed-window)
Reply     a string of little-endian doubles: per key the state after the exchange, window start (-1 when
          the key holds nothing), current count, previous count (0 for fixed-window); then the time, ms

A count for a window older than the key's is over and dropped (for the counter: unless it is the key's
previous window); a newer window replaces the key's as decide.lua would; counts never go below 0 (an
instance gives back what a request it counted took when another rule of that request denied it, after
sending it). A count for a window that has not begun on the script's clock (by more than the margin:
an instance whose clock is far ahead of Redis's, with clock=redis) is dropped, so that it cannot move
the key to a window to come, dropping the fleet's count and setting a TTL that far away. Keys whose
counts are 0 are only read. Each key is written with the TTL decide.lua gives it:
the window's end (the counter: the next window's end) plus the margin.
]]
local call, pcall = redis.call, redis.pcall
local encode, decode, format = struct.pack, struct.unpack, string.format
local MARGIN = 1000 -- RateAlgorithm.EXPIRY_MARGIN_MS

local request = ARGV[1]
local now, pos = decode('<d', request)
if now < 0 then
  local t = call('TIME')
  local us = t[2] + 0
  now = t[1] * 1000 + (us - us % 1000) / 1000
end

local parts = {}
local algorithm, window, ds, dc, dp, key, stored, s, c, p, ttl, tag, a, b, d
for i = 1, #KEYS do
  algorithm, window, ds, dc, dp, pos = decode('<Bdddd', request, pos)
  if ds > now + MARGIN then
    dc, dp = 0, 0 -- a window not begun here: an instance's clock far ahead (the key only read)
  end
  key = KEYS[i]
  s, c, p = -1, 0, 0
  stored = pcall('GET', key)
  if algorithm == 1 then
    if stored and #stored == 17 then
      tag, a, b = decode('<Bdd', stored)
      if tag == 1 then
        s, c = a - window, b
      end
    end
    if dc ~= 0 then
      ttl = nil
      if s < 0 or ds > s then
        if dc > 0 then
          s, c = ds, dc
          ttl = s + window - now + MARGIN
        end
      elseif ds == s then
        c = c + dc
        if c < 0 then
          c = 0
        end
        ttl = s + window - now + MARGIN
      end
      if ttl and ttl >= 1 then
        call('PSETEX', key, format('%d', ttl), encode('<Bdd', 1, s + window, c))
      end
    end
  elseif algorithm == 2 then
    if stored and #stored == 25 then
      tag, a, b, d = decode('<Bddd', stored)
      if tag == 2 then
        s, c, p = a - window, b, d
      end
    end
    if dc ~= 0 or dp ~= 0 then
      if s < 0 then
        s, c, p = ds, 0, 0
      elseif ds > s then
        if ds == s + window then
          p = c
        else
          p = 0
        end
        s, c = ds, 0
      end
      if ds == s then
        c, p = c + dc, p + dp
      elseif ds == s - window then
        p = p + dc
      end
      if c < 0 then
        c = 0
      end
      if p < 0 then
        p = 0
      end
      ttl = s + 2 * window - now + MARGIN
      if ttl >= 1 then
        call('PSETEX', key, format('%d', ttl), encode('<Bddd', 2, s + window, c, p))
      end
    end
  else
    return redis.error_reply('ERR sluice: the approximate mode has no algorithm ' .. algorithm)
  end
  parts[i] = encode('<ddd', s, c, p)
end
parts[#KEYS + 1] = encode('<d', now)
return table.concat(parts)
