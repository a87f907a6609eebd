"""Small modal dialogs over the screens: quitting during a launch (``quit``), the success threshold (``threshold``)
and an attempt's log over the drill-down (``log``)."""
