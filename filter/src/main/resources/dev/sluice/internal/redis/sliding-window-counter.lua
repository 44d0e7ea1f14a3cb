--[[
sliding-window-counter.lua: dev.sluice.internal.algorithm.SlidingWindowCounter, a fragment of
decide.lua.
Sections: #give-back: the counts given back.
State: struct '<Bddd' 2, end ms (of the current count's window), current, previous
(25 bytes); PX = end of the next window + MARGIN. Counts are weighted in units of ms
(count x window) to stay integers. A stored end is read rounded up to a multiple of the window
(it is one unless the window changed).
]]
local start = now - now % window
local current, previous = 0, 0
local stored = pcall('GET', key)
if stored and #stored == 25 then
  local tag, stored_end, stored_current, stored_previous = decode('<Bddd', stored)
  if stored_current + stored_previous > limit then
    -- each read at most RateAlgorithm.maxCount, which is at least 2 x limit (RateAlgorithm.validate), so
    -- only a count charged past the limit is (counts are never negative): it stays exact in this window
    local most = (2251799813685248 - 2251799813685248 % window) / window
    if stored_current > most then
      stored_current = most
    end
    if stored_previous > most then
      stored_previous = most
    end
  end
  if tag == 2 then
    stored_end = stored_end + -stored_end % window
    if now < stored_end then -- the stored current count's window; a lagging caller is at its start
      start, current, previous = stored_end - window, stored_current, stored_previous
    elseif now < stored_end + window then
      previous = stored_current
    end
  end
end
local quota = limit * window
local elapsed = 0 -- into the window; a lagging caller is at the start of the stored window
if now > start then
  elapsed = now - start
end
local previous_units = previous * (window - elapsed)
local x = quota - previous_units - current * window
remaining_now, reset_now = (x - x % window) / window, 0
if current > 0 then
  reset_now = start + 2 * window - now
elseif previous > 0 then
  reset_now = start + window - now
end
-- The first ms at which a request of cost c, denied now, fits is SlidingWindowCounter.admitAt:
-- in this window once the previous window's weight has faded enough (if counted + c <= limit:
-- previous > 0 then), else in the next window once this window's count has. Written out three
-- times: for next_now (c = remaining + 1), for retry (c = cost), for next_after (c = remaining
-- after + 1, counted = current + cost).
local c = remaining_now + 1
if c < 1 then
  c = 1
end
next_now = 0
if c <= limit then
  if current + c <= limit then
    x = (limit - current - c) * window
    next_now = start + window - (x - x % previous) / previous - now
  else
    x = (limit - c) * window
    x = window - (x - x % current) / current
    next_now = start + window + (x > 0 and x or 0) - now
  end
end
if cost > limit and not force then
  admits, retry = false, window
elseif previous_units + (current + cost) * window > quota and not force then
  if current + cost <= limit then
    x = (limit - current - cost) * window
    retry = start + window - (x - x % previous) / previous - now
  else
    x = (limit - cost) * window
    x = window - (x - x % current) / current
    retry = start + window + (x > 0 and x or 0) - now
  end
  admits = false
else
  local counted = current + cost
  if force and counted > (2251799813685248 - 2251799813685248 % window) / window then -- RateAlgorithm.maxCount
    counted = (2251799813685248 - 2251799813685248 % window) / window
  end
  admits, reset_after, delay = true, start + 2 * window - now, 0
  state, ttl = encode('<Bddd', 2, start + window, counted, previous), start + 2 * window - now + MARGIN
  taken_ms, taken_fraction = start + window, 0
  state_answers = 'timed' -- the state, then the time decided at: it can be the reply, the figures the client's
  if several then -- several rules: figures if another's state cannot answer
    x = quota - previous_units - counted * window
    remaining_after = (x - x % window) / window
    c = remaining_after + 1 -- at most limit: this request took at least one
    if counted + c <= limit then
      x = (limit - counted - c) * window
      next_after = start + window - (x - x % previous) / previous - now
    else
      x = (limit - c) * window
      x = window - (x - x % counted) / counted
      next_after = start + window + (x > 0 and x or 0) - now
    end
  end
end
--[[ #give-back ]]
-- sliding-window-counter: off the current count in the request's window, off the previous in the next
if stored and #stored == 25 then
  local tag, ends, current, previous = decode('<Bddd', stored)
  if tag == 2 and (ends == taken_ms or ends == taken_ms + window) then
    if ends == taken_ms then
      current = current > cost and current - cost or 0
    else
      previous = previous > cost and previous - cost or 0
    end
    call('SETRANGE', key, '0', encode('<Bddd', 2, ends, current, previous))
  end
end
