package broker

import (
	"log/slog"
	"syscall"
)

// raiseFDLimit raises this process's soft limit of open files to its
// hard limit, so that connections and segment files can use every file
// descriptor the administrator allows, and logs both limits. (The Go
// runtime raises it at start-up too, but not for a limit lowered after
// that, and without saying so.)
func raiseFDLimit(log *slog.Logger) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		log.Warn("cannot read the open file limit", "err", err)
		return
	}
	soft := lim.Cur
	if lim.Cur < lim.Max {
		raised := syscall.Rlimit{Cur: lim.Max, Max: lim.Max}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
			log.Warn("cannot raise the open file limit to the hard limit", "soft", lim.Cur, "hard", lim.Max, "err", err)
			return
		}
		lim = raised
	}
	log.Info("open file limit", "soft", lim.Cur, "hard", lim.Max, "soft.before", soft)
}
