package plan

// The planner's tables are in package plan_test, to build their states with plantest (which
// imports plan); these are the unexported names they check.

// OthersKeepQuorum is othersKeepQuorum.
var OthersKeepQuorum = othersKeepQuorum
