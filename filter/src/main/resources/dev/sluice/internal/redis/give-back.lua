--[[
give-back.lua: the giveBack of the dev.sluice.internal.algorithm classes, a fragment of decide.lua
(modes 3 and 5: a charge only passes its once check here). Gives back what an admitted request of `cost` took from `key`, as the decision that
admitted it identified the take (taken_ms, taken_fraction), never leaving the state better than
if the request had never happened, whatever was taken since; overwrites the state given back in
place (SETRANGE, which keeps the key's TTL: the state is only ever better, and Redis 5 has no
SET ... KEEPTTL) before the algorithm's fragment evaluates it. A state of another
algorithm or format, or one whose take can no longer be found, gets nothing.

Once only: the take's token is added to the once key (KEYS[base + n + i], a sorted set) scored by the
moment after which this give-back could change nothing any more (the take's count has ended or
faded out, its bucket would be full), one window later still for a caller whose clock lags; a token
already there gives nothing back. The once key expires with its latest such moment plus MARGIN, and
its expired tokens are removed on each give-back, so it holds the tokens of the client's give-backs
that still matter, and nothing once they are over. A charge (mode 5) would change the state whenever
it came again, so its token stays at least a minute: longer than any resend of the same call (a
client library's retry, a cluster redirect) takes; the once-only guarantee of a charge is for those.
]]
if algorithm == 7 then
  -- concurrency: the slot is released; removing a member twice removes it once, so no once key
  pcall('ZREM', key, string.sub(tokens, 8 * i - 7, 8 * i))
  taken_ms = nil
else
local void = taken_ms + 1 -- the buckets: full again by then; the windows' counts end at or after taken_ms
if algorithm == 2 or algorithm == 3 then
  void = taken_ms + window -- the counter's previous count, the log's entries: one window more
end
if void < now then
  void = now
end
void = void + window
if mode == 5 and void < now + 60000 then
  void = now + 60000 -- a charge changes the state whenever it is applied: its token stays for the resends of a minute
end
local once = KEYS[base + n + i]
call('ZREMRANGEBYSCORE', once, '-inf', format('(%d', now))
if call('ZADD', once, 'NX', void, string.sub(tokens, 8 * i - 7, 8 * i)) == 0 then
  taken_ms = nil -- given back before: this is the same give-back again
elseif call('PTTL', once) < void - now + MARGIN then
  call('PEXPIRE', once, format('%d', void - now + MARGIN))
end
if not taken_ms or mode == 5 then
  -- once only: nothing to give back; or a charge, which the algorithm's fragment takes (force)
elseif algorithm == 3 then
  -- sliding-window-log: remove `cost` of the entries logged at taken_ms, those of that ms with the
  -- highest indices, so that its indices stay 0 .. count - 1 (decide.lua numbers new ones from the count)
  local score = format('%d', taken_ms)
  local count = pcall('ZCOUNT', key, score, score)
  if type(count) == 'number' and count > 0 then
    local back = cost
    if back > count then
      back = count
    end
    local removed = 0
    while removed < back do
      local members = {}
      local batch = back - removed
      if batch > 1000 then
        batch = 1000
      end
      for j = 1, batch do
        members[j] = encode('>I6I2', taken_ms, count - removed - j)
      end
      call('ZREM', key, unpack(members))
      removed = removed + batch
    end
  end
else
  local stored = pcall('GET', key)
  if algorithm == 1 or algorithm == 0 then
    -- fixed-window (0: on a calendar): the count drops by the cost while it ends where the request left it
    if stored and #stored == 17 then
      local tag, ends, count = decode('<Bdd', stored)
      if tag == 1 and ends == taken_ms and count > 0 then
        count = count > cost and count - cost or 0
        call('SETRANGE', key, 0, encode('<Bdd', 1, ends, count))
      end
    end
  elseif algorithm == 2 then
    -- sliding-window-counter: off the current count in the request's window, off the previous in the next
    if stored and #stored == 25 then
      local tag, ends, current, previous = decode('<Bddd', stored)
      if tag == 2 and (ends == taken_ms or ends == taken_ms + window) then
        if ends == taken_ms then
          current = current > cost and current - cost or 0
        else
          previous = previous > cost and previous - cost or 0
        end
        call('SETRANGE', key, 0, encode('<Bddd', 2, ends, current, previous))
      end
    end
  elseif algorithm == 4 then
    -- token-bucket: if nothing was taken or given back since (the bucket would be full when the take
    -- left it, the refund counter unmoved), undone exactly; else the cost, at most what refills
    -- between now and that moment, less what was given back since (RateAlgorithm.refundBound)
    if stored and #stored == 28 then
      local tag, units, stamp, scale, refunded = decode('<Bi7I6I7I7', stored)
      if tag == 4 and scale == window then
        local debt = burst * window - units
        local debt_fraction = debt % limit
        local refund = 0
        if refunded == taken_given and stamp + (debt - debt_fraction) / limit == taken_ms and debt_fraction == taken_fraction then
          refund = cost * window -- untouched since the take: undone
        else
          local at = stamp > now and stamp or now
          if taken_ms >= at then
            refund = bound((taken_ms - at) * limit + taken_fraction, refunded - taken_given, window)
            if refund > cost * window then
              refund = cost * window
            end
          end
          if refund > 0 then
            refunded = counted(refunded, refund, window)
          end
        end
        units = units + refund
        call('SETRANGE', key, 0, encode('<Bi7I6I7I7', 4, units, stamp, scale, refunded))
      end
    end
  else
    -- leaky-bucket, gcra: the next free slot or TAT moves back as much (Gcra.givenBack), never before
    -- now but when the request is undone
    if stored and #stored == 27 then
      local tag, stamp, ahead_of_stamp, scale, refunded = decode('<BdI7I4I7', stored)
      if tag == algorithm and scale == limit then
        local remainder = ahead_of_stamp % scale
        local ms = stamp + (ahead_of_stamp - remainder) / scale
        local back_ms, back_remainder
        if refunded == taken_given and ms == taken_ms and remainder == taken_fraction then
          local back = remainder - cost * window -- untouched since the take: undone, not before the stored time
          back_remainder = back % limit
          back_ms = ms + (back - back_remainder) / limit
          if back_ms < stamp then
            back_ms, back_remainder = stamp, 0
          end
        else
          local at = stamp > now and stamp or now
          local refund = 0
          if taken_ms >= at and (ms > at or ms == at and remainder > 0) then
            refund = bound((taken_ms - at) * limit + taken_fraction, refunded - taken_given, limit)
            if refund > cost * window then
              refund = cost * window
            end
          end
          if refund > 0 then
            local back = remainder - refund
            back_remainder = back % limit
            back_ms = ms + (back - back_remainder) / limit
            if back_ms < at then -- never before now: what comes back is what the lead held
              refund, back_ms, back_remainder = (ms - at) * limit + remainder, at, 0
            end
            refunded = counted(refunded, refund, limit)
          end
        end
        if back_ms then
          call('SETRANGE', key, 0, encode('<BdI7I4I7', algorithm, stamp, (back_ms - stamp) * limit + back_remainder, scale,
              refunded))
        end
      end
    end
  end
end
end
