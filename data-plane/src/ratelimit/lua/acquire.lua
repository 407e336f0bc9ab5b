-- One round trip checks and takes all six limits (rpm, tpm, concurrency × key, account) atomically, for every
-- call of one account in a batch (an event-loop turn, or a window of calls admitted locally), one after the
-- other in arrival order (exactly as separate round trips would). The GCRA lines mirror gcra.ts; TATs are
-- stored with %.17g so nothing is lost between calls. Concurrency: a sorted set of leases scored by expiry,
-- so a replica that dies without releasing loses its slots after the lease TTL instead of leaking them; live
-- replicas renew their leases (see heartbeat). A forced call was already admitted by the replica (see
-- Headroom): it is taken even past a limit, so Redis keeps the exact count and later calls wait for what it
-- overran; its answer says so.
-- Calls come in runs: consecutive calls of one key with the same limits share their keys and limits in the
-- arguments (under load a window holds many calls of few keys), and are taken one by one all the same.
-- KEYS: per run key rpm, key tpm, key conc, account rpm, account tpm, account conc.
-- ARGV: lease TTL, concurrency retry, then per run force (0/1), the six limits, the number of calls n, and
-- n times now, estimate and lease id.
-- Answers 15 numbers per call: status (0 refused, 1 taken, 2 forced past a limit), the refusing limit's index,
-- retry, limit and remaining, then remaining and reset of key rpm, key tpm, account rpm, account tpm, then
-- free slots of key and account concurrency (see infoFrom).
-- Within one script each key is read once and written once: the calls go one after the other against local
-- copies (a TAT, a lease count and how far expired leases were dropped), written back at the end, so a batch
-- of many calls costs a few commands per key rather than a few per call.
local leaseTtl = tonumber(ARGV[1])
local concRetry = tonumber(ARGV[2])
local cardOf, prunedTo, leased, leaseOrder = {}, {}, {}, {}

-- Leases held now: expired ones dropped up to now (each once: later calls only drop what expired since).
local function leases(key, now)
  local card = cardOf[key]
  if card == nil then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
    card = redis.call('ZCARD', key)
    prunedTo[key] = now
  elseif now > prunedTo[key] then
    card = card - redis.call('ZREMRANGEBYSCORE', key, '(' .. prunedTo[key], now)
    prunedTo[key] = now
  end
  cardOf[key] = card
  return card
end

local function push(...)
  for _, v in ipairs({...}) do out[#out + 1] = v end
end

local function acquire(kb, now, est, leaseId, limits, force)
  local costs = {1, est, 0, 1, est, 0}
  local tats, newTats, rem, reset, cards = {}, {}, {0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}
  local denyRetry, denyIdx, denyLimit, denyRem = -1, 0, 0, 0
  for i = 1, 6 do
    local limit = limits[i]
    if limit > 0 then
      local key = KEYS[kb + i - 1]
      if i == 3 or i == 6 then
        cards[i] = leases(key, now)
        if cards[i] >= limit and concRetry > denyRetry then
          denyRetry, denyIdx, denyLimit, denyRem = concRetry, i, limit, 0
        end
      else
        local tat = getTat(key)
        tats[i] = tat
        local ok, nt, retry, r, rs = gcra(now, tat, limit, costs[i])
        newTats[i], rem[i], reset[i] = nt, r, rs
        if not ok and retry > denyRetry then
          denyRetry, denyIdx, denyLimit, denyRem = retry, i, limit, r
        end
      end
    end
  end
  local status = 1
  if denyIdx > 0 then
    status = 2
    if not force then
      for _, i in ipairs({1, 2, 4, 5}) do
        if limits[i] > 0 then
          local ok, nt, retry, r, rs = gcra(now, tats[i], limits[i], 0)
          rem[i], reset[i] = r, rs
        end
      end
      push(0, denyIdx, denyRetry, denyLimit, denyRem, rem[1], reset[1], rem[2], reset[2], rem[4], reset[4], rem[5], reset[5], limits[3] - cards[3], limits[6] - cards[6])
      return
    end
  end
  for i = 1, 6 do
    local limit = limits[i]
    if limit > 0 then
      local key = KEYS[kb + i - 1]
      if i == 3 or i == 6 then
        redis.call('ZADD', key, now + leaseTtl, leaseId)
        if not leased[key] then
          leased[key] = true
          leaseOrder[#leaseOrder + 1] = key
        end
        cards[i] = cards[i] + 1
        cardOf[key] = cards[i]
      else
        setTat(key, newTats[i], now)
        if status == 2 then
          local ok, nt, retry, r, rs = gcra(now, newTats[i], limit, 0)
          rem[i], reset[i] = r, rs
        end
      end
    end
  end
  push(status, denyIdx, denyRetry, denyLimit, denyRem, rem[1], reset[1], rem[2], reset[2], rem[4], reset[4], rem[5], reset[5], limits[3] - cards[3], limits[6] - cards[6])
end

local a, kb = 3, 1
while a <= #ARGV do
  local force = ARGV[a] == '1'
  local limits = {}
  for i = 1, 6 do limits[i] = tonumber(ARGV[a + i]) end
  local n = tonumber(ARGV[a + 7])
  a = a + 8
  for j = 1, n do
    acquire(kb, tonumber(ARGV[a]), tonumber(ARGV[a + 1]), ARGV[a + 2], limits, force)
    a = a + 3
  end
  kb = kb + 6
end
writeTats()
for _, key in ipairs(leaseOrder) do
  redis.call('PEXPIRE', key, leaseTtl * 2)
end
return out
