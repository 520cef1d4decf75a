-- wrk script for the extender benchmark: every request POSTs the JSON file named by $BODY.
local path = assert(os.getenv("BODY"), "set BODY to the JSON file to post")
local file = assert(io.open(path, "rb"))
wrk.method = "POST"
wrk.body = file:read("*a")
wrk.headers["Content-Type"] = "application/json"
file:close()
