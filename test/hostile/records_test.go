package hostile

// recordCases attack the record and topic checks.
var recordCases = []hostileCase{}
