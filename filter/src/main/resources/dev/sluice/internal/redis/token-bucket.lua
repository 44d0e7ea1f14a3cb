--[[
token-bucket.lua: dev.sluice.internal.algorithm.TokenBucket, a fragment of decide.lua.
Sections: #give-back: the tokens given back.
State: struct '<Bi7I6I7I7' 4, tokens x window (signed: a charge past empty leaves a debt, negative
tokens; written unsigned before 0.3, the same bytes for every value it wrote), ms, window, refunded
(what was given back so far, modulo 2^52; 28 bytes: ms below 2^48, the year 10889); PX = time to a full
bucket + MARGIN. Tokens are scaled by the window, so a refill of limit per window adds elapsed * limit
units. The stored time never moves backwards: a caller whose clock lags refills nothing. Tokens
scaled by another window (the rule's window changed) are rescaled exactly, rounded down.
]]
local cap = burst * window
local tokens, at, refunded = cap, now, 0
local stored = pcall('GET', key)
if stored and #stored == 28 then
  local tag, units, stamp, scale, stored_refunded = decode('<Bi7I6I7I7', stored)
  if tag == 4 then
    refunded = stored_refunded
    if scale ~= window then
      -- floor(units x window / scale) exactly: whole tokens, then the fraction by binary long
      -- multiplication, every intermediate below 2^53 (scale and window are at most 2^50)
      local whole = (units - units % scale) / scale
      if whole >= burst then
        units = cap
      elseif whole < -(2251799813685248 - 2251799813685248 % window) / window - 1 then
        units = -2251799813685248 -- a debt read in a much longer window: kept within the exact range
      else
        local fraction, q, rest, w, bit = units % scale, 0, 0, window, 1125899906842624
        while bit >= 1 do
          q, rest = q * 2, rest * 2
          if rest >= scale then
            q, rest = q + 1, rest - scale
          end
          if w >= bit then
            w, rest = w - bit, rest + fraction
            if rest >= scale then
              q, rest = q + 1, rest - scale
            end
          end
          bit = bit / 2
        end
        units = whole * window + q
        if units < -2251799813685248 then
          units = -2251799813685248
        end
      end
    end
    if units > cap then
      units = cap
    end
    if stamp > now then
      at = stamp
    end
    -- below 2^53 or not, the product compares exactly with a value below 2^50
    if (at - stamp) * limit < cap - units then
      tokens = units + (at - stamp) * limit
    end
  end
end
local skew = at - now
local part = tokens % window -- below one whole token
remaining_now, reset_now, next_now = (tokens - part) / window, 0, 0
if tokens < cap then
  local x = cap - tokens
  reset_now = skew + (x + -x % limit) / limit
  x = window - part -- until one more whole token
  if tokens < 0 then
    x = window - tokens -- in debt: until it is paid and one token more
  end
  next_now = skew + (x + -x % limit) / limit
end
if cost > burst and not force then
  admits, retry = false, window
elseif tokens < cost * window and not force then
  local x = cost * window - tokens
  admits, retry = false, skew + (x + -x % limit) / limit
else
  local left = tokens - cost * window
  if force and left < 0 then
    -- a charge past empty: a debt, negative tokens, of at most RateAlgorithm.maxDebtUnits
    local most = 2251799813685248
    if limit < 32768 and limit * 68719476736 < most then
      most = limit * 68719476736
    end
    if left < -most then
      left = -most
    end
  end
  local x = cap - left -- full again x / limit ms after `at`, had nothing else been taken
  admits, delay, reset_after = true, 0, skew + (x + -x % limit) / limit
  state, ttl = encode('<Bi7I6I7I7', 4, left, at, window, refunded), reset_after + MARGIN
  state_answers = skew == 0 -- the state holds the time decided at: it can be the reply, the figures the client's
  if several or not state_answers then -- several rules: figures if another's state cannot answer
    taken_fraction, taken_given = x % limit, refunded
    taken_ms = at + (x - taken_fraction) / limit
    if left < 0 then
      remaining_after, x = (left - left % window) / window, window - left -- until it is paid and one token more
    else
      part = left % window
      remaining_after, x = (left - part) / window, window - part -- until one more whole token
    end
    next_after = skew + (x + -x % limit) / limit
  end
end
--[[ #give-back ]]
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
    call('SETRANGE', key, '0', encode('<Bi7I6I7I7', 4, units, stamp, scale, refunded))
  end
end
