// Package eventtext renders a run's events as short lines for a person
// (what happened, to which step, and why when something failed), the same
// in every front end that shows them: stratum audit, stratum run's
// progress, stratum watch and the event log of stratum serve's run page.
//
// eventtext imports only engine of the module.
package eventtext
