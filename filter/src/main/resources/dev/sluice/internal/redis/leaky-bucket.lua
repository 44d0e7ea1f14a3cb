--[[
leaky-bucket.lua: dev.sluice.internal.algorithm.LeakyBucket, a fragment of decide.lua.
Its give-back is gcra.lua's #give-back (the same state, tagged 5).
State: struct '<BdI7I4I7' 5, the latest time a request took at (ms), how far the next free slot is
ahead of it (in ms x limit), the limit that is counted in, refunded (what was given back so far,
modulo 2^52); 27 bytes; PX = time until the queue has drained + MARGIN. A slot is `window` units
of ms x limit; max_delay is capped where the burst binds anyway. The slot stays when the figures
change; a remainder of another limit is rounded up to a whole ms.
]]
local cap = burst * window
local most = (cap + -cap % limit) / limit -- the longest a full queue takes to drain, in ms
if max_delay > most then
  max_delay = most
end
local max_delay_units = max_delay * limit
local queued = 0 -- units ahead of now
local far, far_remainder -- a slot beyond any admission (Gcra.farLeadMs): its lead in ms, its remainder
local stored = pcall('GET', key)
local stamp, refunded = now, 0 -- the latest time a request took at; what was given back so far
if stored and #stored == 27 then
  local tag, stored_stamp, ahead_of_stamp, scale, stored_refunded = decode('<BdI7I4I7', stored)
  if tag == 5 then
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
      if lead > most + window then -- Gcra.maxLeadMs
        far, far_remainder = lead, remainder
      else
        queued = lead * limit + remainder
      end
    end
  end
end
if far then
  -- denied (the queue is beyond the burst); lead x limit could leave the exact range: in ms
  admits, remaining_now, reset_now, next_now, retry = false, -1, far, 0, window
  if far_remainder > 0 then
    reset_now = far + 1
  end
  if cost <= burst then
    local x = far_remainder + cost * window - cap
    local y = far_remainder - max_delay_units
    x, y = (x + -x % limit) / limit, (y + -y % limit) / limit
    if y > x then
      x = y
    end
    retry = far + x
  end
else
  -- the cost-1 requests a queue of q units admits one after another (some delayed): min(by burst, by delay)
  local q = queued
  local x = cap - q
  local by_delay = 0
  if q <= max_delay_units then
    by_delay = (max_delay_units - q - (max_delay_units - q) % window) / window + 1
  end
  remaining_now = (x - x % window) / window
  if by_delay < remaining_now then
    remaining_now = by_delay
  end
  reset_now, next_now = (q + -q % limit) / limit, 0
  -- next: until the queue is at most r + 1 slots below the burst and r slots below the longest delay
  local r = remaining_now
  if r < 0 then
    r = 0
  end
  local room = cap - (r + 1) * window
  if max_delay_units - r * window < room then
    room = max_delay_units - r * window
  end
  if room >= 0 then
    x = q - room
    next_now = (x + -x % limit) / limit
  end
  local after = queued + cost * window
  if cost > burst then
    admits, retry = false, window
  elseif queued > max_delay_units or after > cap then
    x = after - cap
    retry = (x + -x % limit) / limit
    x = queued - max_delay_units
    x = (x + -x % limit) / limit
    if x > retry then
      retry = x
    end
    if retry < 0 then
      retry = 0
    end
    admits = false
  else
    local whole = (after - after % limit) / limit
    admits, delay, reset_after = true, (queued + -queued % limit) / limit, (after + -after % limit) / limit
    taken_ms, taken_fraction = now + whole, after - whole * limit
    state, ttl = encode('<BdI7I4I7', 5, stamp, (taken_ms - stamp) * limit + taken_fraction, limit, refunded), reset_after + MARGIN
    -- the state holds the time decided at and `after`, the queue after this request (its delay: less the cost)
    state_answers = stamp == now -- it can be the reply
    if several or not state_answers then -- several rules: figures if another's state cannot answer
      q = after -- the same figures for the queue after this request
      x = cap - q
      by_delay = 0
      if q <= max_delay_units then
        by_delay = (max_delay_units - q - (max_delay_units - q) % window) / window + 1
      end
      remaining_after = (x - x % window) / window
      if by_delay < remaining_after then
        remaining_after = by_delay
      end
      next_after = 0
      r = remaining_after
      if r < 0 then
        r = 0
      end
      room = cap - (r + 1) * window
      if max_delay_units - r * window < room then
        room = max_delay_units - r * window
      end
      if room >= 0 then
        x = q - room
        next_after = (x + -x % limit) / limit
      end
      taken_given = refunded
    end
  end
end
