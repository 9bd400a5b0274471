package guard

func warningOf(*TransitionResult) string { return "" }
