--[[
decide.lua: decides every rule of one request, atomically; or gives back what an admitted request
took, for all its rules. A block that returns the reply, spliced into the scripts Redis runs:
decide-one.lua (one request per call: the block is the script's body) and decide-batch.lua
(several requests per call: the block is the body of a function called per request). Both define
first the locals it reads: base, n_keys, request, tokens (below), call, pcall (redis.call and
redis.pcall), encode, decode, format, concat (struct.pack, struct.unpack, string.format, table.concat), MARGIN,
redis_now (Redis's TIME in ms once read in this script call, else nil), px_ttl, px (the last TTL
written in this script call and its text, else nil: a batch's requests often write the same TTL), and
tail_at, tail (the last time a window's state reply was followed by, and its 8 bytes, else nil).

KEYS[base + i]  the state key of acquisition i: <key-prefix>{<rule>:<client key>}; in a give-back
          (tokens given) followed by each acquisition's once key, KEYS[base + n + i]: its state key
          with ':once' appended (the same slot); n_keys keys in all
request   (ARGV[1] of decide-one.lua; in decide-batch.lua, ARGV[2] holds every request) the requests
          from byte `at` on: the request, little-endian binary, as RequestCodec writes it:
          '<d' now in ms since the epoch (negative: read the server's TIME, clock=redis); then per key
          in order '<BBddddd': algorithm (1 fixed-window, 2 sliding-window-counter,
          3 sliding-window-log, 4 token-bucket, 5 leaky-bucket, 6 gcra, 7 concurrency; 0 fixed-window
          on a calendar), mode, limit, window ms (a calendar's: its longest; concurrency's: the lease),
          burst, max delay ms, cost; for modes 3 and 5 followed by '<ddd': taken ms, fraction, given
          back (what the decision that admitted it returned); a calendar rule then by its window
          boundaries, '<ddddd' (fixed-window.lua); a concurrency rule in modes 0 to 2 then by its take's
          token, 'c8' (concurrency.lua). Modes: 0 enforcing; 1 shadow (its denial refuses
          nothing); 2 evaluate only (write nothing); 3 give back `cost` of what the request took (a
          concurrency rule: release its slot), then evaluate only; 5 charge `cost` more, past the limit
          if need be (rule.<r>.actual-cost: the algorithm's fragment takes it as a request admitted
          whatever its state), then evaluate the state as it was before
tokens    (ARGV[2] of decide-one.lua; of decide-batch.lua, one of ARGV[3...]) give-backs and charges only
          (modes 3 and 5), else nil: per acquisition the 8 bytes
          of its take's token (RuleDecision.Take), what makes a second application of the same give-back
          or charge (a call resent after a dropped connection, a cluster retry) change nothing: see
          give-back.lua; a concurrency slot's member
Returns   a string, little-endian doubles, as ReplyCodec reads it: per key its outcome, then that
          outcome's figures: 0 denied: remaining, retry-after ms, reset ms; 1 admits, took nothing
          (another rule denied, or modes 2 to 5): remaining, reset ms, next ms (until remaining
          grows); 2 took the cost: remaining, taken ms, reset ms, next ms, then a leaky bucket (5) its
          delay ms, and algorithms 4 to 7 (the buckets, concurrency) taken fraction and given back (a
          bucket's refund counter: with taken ms, what identifies the take in the state, for a
          give-back; concurrency's are 0). Then the time decided at, ms since the epoch.
          Or, for a request that took from every rule, each able to answer with its state
          (state_answers), the states as written, rule after rule, whose figures the client works
          out (ReplyCodec; it spares the reply's struct.pack, up to 6,000 instructions a rule, and
          for one rule the figures' arithmetic): a token bucket's, GCRA's or leaky bucket's when it
          holds the time decided at (its clock not behind the state's), a fixed (not calendar)
          window's or sliding-window counter's always; the time decided at, '<d', follows the
          states when a window's is among them (a window's state holds none; a bucket's is that
          time). Told apart by its first byte, the first state's tag (1, 2, 4, 5, 6); a reply of
          figures begins with a 0 byte (an outcome 0, 1 or 2 as a little-endian double)

Either every enforcing rule admits the request and each rule that admits takes its cost, or
nothing is written at all: a request denied by one rule takes nothing from the others. A shadow
rule (mode 1) never blocks the others: when it denies, it takes nothing and the request is decided
by the enforcing rules. A rule that would admit a denied request reports allowed = 1 with the
figures of its untouched state; so does every rule of a call in modes 2 and 3, which writes no
decision (a request on Redis Cluster whose rules live in different slots: see RedisEngine).

Each algorithm is one file, the translation of its dev.sluice.internal.algorithm class, spliced in
where its name stands (RedisEngine assembles the scripts once: a line naming name.lua takes the file
up to its first section, one naming name.lua#section that section). Its first part decides: a block of
plain code that reads key, now, limit, window, burst, max_delay and cost, reads the key and writes
nothing, and sets what the class's Verdict holds: admits; remaining_now, reset_now, next_now (the
figures when nothing is taken; next is the time until remaining grows, 0 when waiting cannot raise
it); retry (denied); remaining_after, reset_after, next_after, delay, taken_ms, taken_fraction
(admitted); and what to write: state and ttl (PSETEX key ttl state, below, for the one-value
states), or for sliding-window-log and concurrency what its section #write adds to the sorted set.
A fragment whose state can be the reply sets state_answers when it takes and its state can answer
(the buckets need the state's time to be the time decided at): true for the state alone, 'timed'
for the state then the time decided at (the windows'); for a request of one rule (`several` nil) it
then need not set remaining_after, next_after nor the taken figures: the client computes them from
the state. A request of several rules needs them all the same: another rule's state may not answer
(a sliding-window log, a lagging clock, a shadow rule's denial), and then every rule answers with
figures. A request in modes 2 to 5 writes no decision: decide.lua answers it with figures first.
Its section #give-back, the class's giveBack, writes the state given back (SETRANGE, ZREM) before
the first part reads it; give-back.lua holds what every give-back shares (the once-only check, the
state read) and picks the algorithm's section. Sections are spliced text, not functions: a Lua call
would cost hundreds of instructions per request, and the assembled script is the same code either way.

The time on Redis's clock is read once per script call (TIME): the requests of a batch share it.

Cost: Redis runs this whole body on every request, and in its Lua 5.1 every function call, closure,
table and string costs hundreds of CPU instructions, each redis.call and each argument thousands.
So: one packed argument, packed states and reply (struct, no string parsing or formatting but the
TTL, whose text a batch's requests share while it repeats), PSETEX rather than its equal SET ... PX
(an argument and an option parsed less: ~600 instructions), no function definitions and no tables for
a request of one rule, and divisions written inline: floor(a / b) as (a - a % b) / b and ceil(a / b)
as (a + -a % b) / b, exact because every value is an integer below 2^53 (RateAlgorithm.validate
bounds the parameters), where a double holds it and a % b is exact. A state of another format (another algorithm's, or an older Sluice's
text states) is treated as absent: that client starts afresh.
]]
-- a rule's layout, and the time with the first rule: decoded in one call (a call less: ~1,000 instructions)
local RULE, TIME_AND_RULE = '<BBddddd', '<dBBddddd'
local now, algorithm, mode, limit, window, burst, max_delay, cost, pos = decode(TIME_AND_RULE, request, at)
if now < 0 then
  if not redis_now then
    local t = call('TIME')
    local us = t[2] + 0
    redis_now = t[1] * 1000 + (us - us % 1000) / 1000
  end
  now = redis_now
end

local n = tokens and n_keys / 2 or n_keys -- a settlement: the takes' tokens, and a once key per state key
local several = n > 1 and {} or nil -- the verdicts, kept for the writes only when there are several rules
local admitted = true
local key
local admits, remaining_now, reset_now, next_now, retry, remaining_after, reset_after, next_after, delay, state, ttl
local taken_ms, taken_fraction, taken_given
local state_answers -- a take's state holds its figures: it can be the reply alone (true), or then the time ('timed')
local all_answer, timed = true, false -- several rules: every one took and its state can answer; a window's among them
local log_foreign, log_index -- the key holds another type (sliding-window-log, concurrency); entries already at the logged time
local force -- a charge (mode 5) not applied before: the fragment takes `cost` whatever the limit (false again once written)
for i = 1, n do
  if i > 1 then
    algorithm, mode, limit, window, burst, max_delay, cost, pos = decode(RULE, request, pos)
  end
  key = KEYS[base + i]
  if mode >= 2 then
    admitted = false -- evaluate only: no decision is written
    if mode >= 3 then
      taken_ms, taken_fraction, taken_given, pos = decode('<ddd', request, pos)
      --[[ give-back.lua ]]
      if mode == 5 and taken_ms then
        force = true
        if algorithm <= 1 then -- fixed-window: FixedWindow.MAX_CHARGED_COUNT, whatever the window
          if cost > 2251799813685248 then
            cost = 2251799813685248
          end
        else
          local most = 4503599627370496 - 4503599627370496 % window -- RateAlgorithm.chargeable: cost x window <= 2^52
          if cost > most / window then
            cost = most / window
          end
        end
      end
    end
  end
  if algorithm == 4 then
    --[[ token-bucket.lua ]]
  elseif algorithm == 6 then
    --[[ gcra.lua ]]
  elseif algorithm == 1 or algorithm == 0 then
    --[[ fixed-window.lua ]]
  elseif algorithm == 2 then
    --[[ sliding-window-counter.lua ]]
  elseif algorithm == 5 then
    --[[ leaky-bucket.lua ]]
  elseif algorithm == 3 then
    --[[ sliding-window-log.lua ]]
  elseif algorithm == 7 then
    --[[ concurrency.lua ]]
  else
    return redis.error_reply('ERR sluice: unknown algorithm ' .. algorithm)
  end
  if not admits and mode == 0 then
    admitted = false -- a shadow rule's denial refuses nothing
  elseif force then
    call('PSETEX', key, format('%d', ttl), state) -- a charge writes what the fragment took
    force = false
  end
  if several then
    several[i] = { algorithm, limit, window, cost, admits, remaining_now, reset_now, next_now, retry,
                   remaining_after, reset_after, next_after, delay, state, ttl, log_foreign, log_index, taken_ms,
                   taken_fraction, taken_given }
    if not admits or not state_answers then
      all_answer = false
    elseif state_answers ~= true then
      timed = true
    end
    state_answers = false
  end
end

if n == 1 and not (admitted and admits) then
  if admits then
    return encode('<ddddd', 1, remaining_now, reset_now, next_now, now)
  end
  return encode('<ddddd', 0, remaining_now, retry, reset_now, now)
end

-- several rules that all took, each state able to answer: the states are the reply, in order (then the time)
local answering = several and admitted and all_answer
local reply = several and {} or nil
for i = 1, n do
  if several then
    algorithm, limit, window, cost, admits, remaining_now, reset_now, next_now, retry, remaining_after, reset_after,
        next_after, delay, state, ttl, log_foreign, log_index, taken_ms, taken_fraction, taken_given = unpack(several[i], 1, 20)
    key = KEYS[base + i]
  end
  if admitted and admits then
    if algorithm ~= 3 and algorithm ~= 7 then
      if ttl ~= px_ttl then
        px_ttl, px = ttl, format('%d', ttl)
      end
      call('PSETEX', key, px, state)
    elseif algorithm == 7 then
      --[[ concurrency.lua#write ]]
    else
      --[[ sliding-window-log.lua#write ]]
    end
    if not several then
      if state_answers == true then
        return state -- the client works the figures out from it (ReplyCodec)
      elseif state_answers then -- 'timed': the state holds no time decided at; it follows, packed once per time
        if now ~= tail_at then
          tail_at, tail = now, encode('<d', now)
        end
        return state .. tail
      elseif algorithm == 5 then
        return encode('<ddddddddd', 2, remaining_after, taken_ms, reset_after, next_after, delay, taken_fraction, taken_given,
            now)
      elseif algorithm >= 4 then
        return encode('<dddddddd', 2, remaining_after, taken_ms, reset_after, next_after, taken_fraction, taken_given, now)
      end
      return encode('<dddddd', 2, remaining_after, taken_ms, reset_after, next_after, now)
    end
  end
  if answering then
    reply[i] = state
  else
    local o = #reply
    if admitted and admits then
      reply[o + 1], reply[o + 2], reply[o + 3], reply[o + 4], reply[o + 5] = 2, remaining_after, taken_ms, reset_after, next_after
      if algorithm == 5 then
        reply[o + 6], reply[o + 7], reply[o + 8] = delay, taken_fraction, taken_given
      elseif algorithm >= 4 then
        reply[o + 6], reply[o + 7] = taken_fraction, taken_given
      end
    elseif admits then
      reply[o + 1], reply[o + 2], reply[o + 3], reply[o + 4] = 1, remaining_now, reset_now, next_now
    else
      reply[o + 1], reply[o + 2], reply[o + 3], reply[o + 4] = 0, remaining_now, retry, reset_now
    end
  end
end
if answering then
  if timed then
    if now ~= tail_at then
      tail_at, tail = now, encode('<d', now)
    end
    reply[n + 1] = tail
  end
  return concat(reply)
end
reply[#reply + 1] = now
return encode('<' .. string.rep('d', #reply), unpack(reply))
