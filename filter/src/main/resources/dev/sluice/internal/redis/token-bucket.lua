--[[
token-bucket.lua: dev.sluice.internal.algorithm.TokenBucket.
KEYS: the client's key. State: string "T<tokens x window>:<ms>", PX = time to a full bucket + MARGIN.
Tokens are scaled by the window, so a refill of limit per window adds elapsed * limit units.
The stored time never moves backwards: a caller whose clock lags refills nothing.
]]
-- The time until the bucket holds one more whole token than `tokens`; 0 when it is full.
local function token_next(tokens, cap, window, limit, skew)
  if tokens >= cap then
    return 0
  end
  return skew + ceil_div((floor_div(tokens, window) + 1) * window - tokens, limit)
end

local function token_bucket(key, now, limit, window, burst, cost)
  local cap = burst * window
  local tokens, at = cap, now
  local stored, stamp = read_string(key, '^T(%d+):(%d+)$')
  if stored then
    stored = min(stored + 0, cap)
    stamp = stamp + 0
    at = max(now, stamp)
    local elapsed = at - stamp
    if elapsed < ceil_div(cap - stored, limit) then
      tokens = stored + elapsed * limit
    end
  end
  local skew = at - now
  local remaining_now = floor_div(tokens, window)
  local reset_now = 0
  if tokens < cap then
    reset_now = skew + ceil_div(cap - tokens, limit)
  end
  if cost > burst then
    return false, remaining_now, reset_now, 0, 0, 0, 0, 0, window
  end
  local need = cost * window
  if tokens < need then
    return false, remaining_now, reset_now, 0, 0, 0, 0, 0, skew + ceil_div(need - tokens, limit)
  end
  local left = tokens - need
  local reset_after = skew + ceil_div(cap - left, limit)
  return true, remaining_now, reset_now, token_next(tokens, cap, window, limit, skew), floor_div(left, window), reset_after,
      token_next(left, cap, window, limit, skew), 0, 0, format('T%d:%d', left, at), reset_after + MARGIN
end
