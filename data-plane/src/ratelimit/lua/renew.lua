-- Renews the leases this replica still holds; XX so a lease released meanwhile is not re-created.
local expiry = tonumber(ARGV[1])
for i = 1, #KEYS do
  redis.call('ZADD', KEYS[i], 'XX', expiry, ARGV[i + 1])
end
return 1
