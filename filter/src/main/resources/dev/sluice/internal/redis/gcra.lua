--[[
gcra.lua: dev.sluice.internal.algorithm.Gcra, a fragment of decide.lua.
Sections: #give-back: the TAT (a leaky bucket's next free slot: the same state) moved back.
State: struct '<BdI7I4I7' 6, the latest time a request took at (ms), how far the TAT is ahead of it
(in ms x limit), the limit that is counted in, refunded (what was given back so far, modulo 2^52);
27 bytes; PX = time until the TAT + MARGIN. The emission interval window / limit is exactly `window` units
of ms x limit; the same answers as the token bucket. The TAT stays when the figures change; a
remainder of another limit is rounded up to a whole ms.
]]
local cap = burst * window
local ahead = 0 -- how far the TAT is ahead of now, in ms x limit
local far, far_remainder -- a TAT beyond any admission (Gcra.farLeadMs): its lead in ms, its remainder
local stored = pcall('GET', key)
local stamp, refunded = now, 0 -- the latest time a request took at; what was given back so far
if stored and #stored == 27 then
  local tag, stored_stamp, ahead_of_stamp, scale, stored_refunded = decode('<BdI7I4I7', stored)
  if tag == 6 then
    local remainder = ahead_of_stamp % scale -- the stored time: stored_stamp + ahead_of_stamp / scale ms
    local ms = stored_stamp + (ahead_of_stamp - remainder) / scale
    if stored_stamp > now then
      stamp = stored_stamp
    end
    refunded = stored_refunded
    if scale ~= limit and remainder > 0 then -- counted in another limit's units: up to the next ms
      ms, remainder = ms + 1, 0
    end
    if ms >= now then
      local lead = ms - now
      if lead > (cap + -cap % limit) / limit + window then -- Gcra.maxLeadMs
        far, far_remainder = lead, remainder
      else
        ahead = lead * limit + remainder
      end
    end
  end
end
if far and force then
  if far > (2251799813685248 - 2251799813685248 % limit) / limit then
    force = false -- a debt beyond what one may owe under this limit already (charged under a smaller one): as it is
  else
    ahead, far = far * limit + far_remainder, nil -- a charge counts the whole lead
  end
end
if far then
  -- denied; lead x limit could leave the exact range, so the figures are worked out in ms
  admits, remaining_now, reset_now, next_now, retry = false, -1, far, 0, window
  if far_remainder > 0 then
    reset_now = far + 1
  end
  if cost <= burst then
    local x = far_remainder + cost * window - cap
    retry = far + (x + -x % limit) / limit
  end
else
  local x = cap - ahead
  remaining_now, reset_now, next_now = (x - x % window) / window, (ahead + -ahead % limit) / limit, 0
  if ahead > 0 then -- until one more whole token: ahead falls to cap - (tokens + 1) x window
    local whole = remaining_now
    if whole < 0 then
      whole = 0
    end
    x = ahead - cap + (whole + 1) * window
    next_now = (x + -x % limit) / limit
  end
  local after = ahead + cost * window
  if force then
    local most = 2251799813685248 -- RateAlgorithm.maxDebtUnits, or the lead already there
    if limit < 32768 and limit * 68719476736 < most then
      most = limit * 68719476736
    end
    if ahead > most then
      most = ahead
    end
    if after > most then
      after = most
    end
  end
  if cost > burst and not force then
    admits, retry = false, window
  elseif after > cap and not force then
    x = after - cap
    admits, retry = false, (x + -x % limit) / limit
  else
    admits, delay, reset_after = true, 0, (after + -after % limit) / limit
    local whole = (after - after % limit) / limit
    taken_ms, taken_fraction = now + whole, after - whole * limit
    state, ttl = encode('<BdI7I4I7', 6, stamp, (taken_ms - stamp) * limit + taken_fraction, limit, refunded), reset_after + MARGIN
    state_answers = stamp == now -- the state holds the time decided at and `after`: it can be the reply
    if several or not state_answers then -- several rules: figures if another's state cannot answer
      x = cap - after
      remaining_after = (x - x % window) / window
      x = after - cap + (remaining_after + 1) * window
      next_after, taken_given = (x + -x % limit) / limit, refunded
    end
  end
end
--[[ #give-back ]]
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
      call('SETRANGE', key, '0', encode('<BdI7I4I7', algorithm, stamp, (back_ms - stamp) * limit + back_remainder, scale,
          refunded))
    end
  end
end
