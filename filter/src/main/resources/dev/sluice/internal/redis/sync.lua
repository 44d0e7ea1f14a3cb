--[[
sync.lua: the approximate mode's exchange (dev.sluice.internal.approximate.ApproximateEngine, sent by
dev.sluice.internal.redis.SyncScript): once per sync interval, one call for many keys of one instance.
Adds what the instance counted since its last sync to each key's window and returns the fleet's counts.

KEYS[i]   the state key of a rule's client, <key-prefix>{<rule>:<client key>}: the key decide.lua keeps,
          in its format (fixed-window '<Bdd' 1, end, count; sliding-window-counter '<Bddd' 2, end,
          current, previous: end is when the current count's window ends), so that exact and
          approximate decisions count together; here a window is named by its start (end - window)
ARGV[1]   little-endian binary: struct '<d' now in ms since the epoch (negative: read the server's TIME,
          clock=redis); then per key '<Bdddddd': algorithm (1 fixed-window, 2 sliding-window-counter),
          window ms, the start of the window the instance counts in, its takes there, its takes in the
          window before (sliding-window-counter only; 0 for fixed-window), then its give-backs of takes
          it sent before into that window's count and into the one before's (0 for fixed-window)
Reply     a string of little-endian doubles: per key the state after the exchange, window start (-1 when
          the key holds nothing), current count, previous count (0 for fixed-window); then the time, ms

A stored count is read as decide.lua reads it: it applies until its end, whatever window wrote it (a
plan switch or a reload changes a rule's window while a client's count runs), and it is named by its
start for this window, end - window (the counter's end rounded up to a multiple of the window first,
as sliding-window-counter.lua does), which can lie ahead of `now` when the window was made shorter.
An instance's counts join the stored count when the instance's window holds a moment the count
applies (fixed-window: the stored count runs past the instance window's start and either that window
still runs or is the stored count's own; the count then ends at the later of the two ends, if the
instance's window has begun: not at the end of a window named after the stored count's end, a week
not begun when a month's count is read by weeks), as decide.lua counts a request while a count
applies and a lagging caller's against the window already begun; a count that has ended, its key
not yet expired, is not joined; the counter: when the instance's window still runs and the key's is
later, its counts join the key's current count, its window before the key's previous when the key's
is the next). A give-back comes off its own window's count only, before the takes are added, and
only off a count the key holds: one for a window the key has moved on from (a lagging instance's) or
that the key lost (an eviction, a failover) is dropped, since the count that runs never held its take;
counts never go below 0. Takes are never negative (one is read as 0). Else a newer window replaces the
key's as decide.lua would, and a count for a window that is over is dropped (for the counter: unless it
is the key's previous window). A count for a window that has not begun on the script's clock (by more
than the margin: an instance whose clock is far ahead of Redis's, with clock=redis) is dropped unless
it joins a stored count that runs then (the instance learned that window from this script), so that it
cannot move the key to a window to come, dropping the fleet's count and setting a TTL that far away.
Keys whose counts are 0 are only read. Each key is written with the TTL decide.lua gives it: the
count's end (the counter: the next window's end) plus the margin.
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
local algorithm, window, ds, dc, dp, gc, gp, key, stored, s, c, p, e, ttl, tag, a, b, d
for i = 1, #KEYS do
  algorithm, window, ds, dc, dp, gc, gp, pos = decode('<Bdddddd', request, pos)
  if dc < 0 then
    dc = 0
  end
  if dp < 0 then
    dp = 0
  end
  key = KEYS[i]
  s, c, p, e, ttl = -1, 0, 0, -1, nil
  stored = pcall('GET', key)
  if algorithm == 1 then
    if stored and #stored == 17 then
      tag, a, b = decode('<Bdd', stored)
      if tag == 1 and a > now then
        e, c = a, b -- a count applies until its end (decide.lua: at < stored_end); one ended is not revived
      end
    end
    if ds > now + MARGIN and e <= ds then
      dc = 0 -- a window not begun here, no count running then: an instance's clock far ahead (the key only read)
    end
    if gc > 0 and e > ds and ds >= e - window then
      c = c - gc -- given back off the count of the takes' own window
      if c < 0 then
        c = 0
      end
      ttl = e - now + MARGIN
    end
    if dc > 0 then
      if e > ds and (ds >= e - window or ds + window > now) then
        c = c + dc -- the count running in the instance's window
        if ds + window > e and ds <= now then
          e = ds + window -- extended to the end of a window begun (not of one named after the stored count's end)
        end
        ttl = e - now + MARGIN
      elseif e <= ds then
        e, c = ds + window, dc -- the stored count is over: the instance's window replaces it
        ttl = e - now + MARGIN
      end
    end
    if ttl and ttl >= 1 then
      call('PSETEX', key, format('%d', ttl), encode('<Bdd', 1, e, c))
    end
    if e >= 0 then
      s = e - window
    end
  elseif algorithm == 2 then
    if stored and #stored == 25 then
      tag, a, b, d = decode('<Bddd', stored)
      if tag == 2 then
        s, c, p = a + -a % window - window, b, d
      end
    end
    if ds > now + MARGIN and ds ~= s then
      dc, dp = 0, 0 -- a window not begun here: an instance's clock far ahead (the key only read)
    end
    if s >= 0 and (gc > 0 or gp > 0) then
      -- given back off the counts of the takes' own windows, ds's and the one before's, where the key holds them
      if s == ds then
        c, p = c - gc, p - gp
      elseif s == ds + window then
        p = p - gc
      elseif s == ds - window then
        c = c - gp
      end
      if c < 0 then
        c = 0
      end
      if p < 0 then
        p = 0
      end
      ttl = s + 2 * window - now + MARGIN
    end
    if dc > 0 or dp > 0 then
      if s >= 0 and ds < s and ds + window > now then
        -- a lagging instance, or a window made shorter: its counts join the key's current window, as decide.lua
        -- counts a lagging caller's (its window before stays the one before when the key's is the next)
        c = c + dc
        if ds == s - window then
          p = p + dp
        else
          c = c + dp
        end
      else
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
      end
      ttl = s + 2 * window - now + MARGIN
    end
    if ttl and ttl >= 1 then
      call('PSETEX', key, format('%d', ttl), encode('<Bddd', 2, s + window, c, p))
    end
  else
    return redis.error_reply('ERR sluice: the approximate mode has no algorithm ' .. algorithm)
  end
  parts[i] = encode('<ddd', s, c, p)
end
parts[#KEYS + 1] = encode('<d', now)
return table.concat(parts)
