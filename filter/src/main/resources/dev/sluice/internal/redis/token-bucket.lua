--[[
token-bucket.lua: dev.sluice.internal.algorithm.TokenBucket, a fragment of decide.lua.
State: struct '<BI7I6I7I7' 4, tokens x window, ms, window, refunded (what was given back so far,
modulo 2^52; 28 bytes: ms below 2^48, the year 10889); PX = time to a full bucket + MARGIN. Tokens are scaled by the window, so a refill of limit per window adds elapsed * limit
units. The stored time never moves backwards: a caller whose clock lags refills nothing. Tokens
scaled by another window (the rule's window changed) are rescaled exactly, rounded down.
]]
local cap = burst * window
local tokens, at, refunded = cap, now, 0
local stored = pcall('GET', key)
if stored and #stored == 28 then
  local tag, units, stamp, scale, stored_refunded = decode('<BI7I6I7I7', stored)
  if tag == 4 then
    refunded = stored_refunded
    if scale ~= window then
      -- floor(units x window / scale) exactly: whole tokens, then the fraction by binary long
      -- multiplication, every intermediate below 2^53 (scale and window are at most 2^50)
      local whole = (units - units % scale) / scale
      if whole >= burst then
        units = cap
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
remaining_now, reset_now, next_now = (tokens - tokens % window) / window, 0, 0
if tokens < cap then
  local x = cap - tokens
  reset_now = skew + (x + -x % limit) / limit
  x = (remaining_now + 1) * window - tokens -- until one more whole token
  next_now = skew + (x + -x % limit) / limit
end
if cost > burst then
  admits, retry = false, window
elseif tokens < cost * window then
  local x = cost * window - tokens
  admits, retry = false, skew + (x + -x % limit) / limit
else
  local left = tokens - cost * window
  remaining_after = (left - left % window) / window
  local x = cap - left
  reset_after = skew + (x + -x % limit) / limit
  x = (remaining_after + 1) * window - left
  admits, next_after, delay = true, skew + (x + -x % limit) / limit, 0
  state, ttl = encode('<BI7I6I7I7', 4, left, at, window, refunded), reset_after + MARGIN
  x = cap - left -- full again x / limit ms after `at`, had nothing else been taken
  taken_fraction, taken_given = x % limit, refunded
  taken_ms = at + (x - taken_fraction) / limit
end
