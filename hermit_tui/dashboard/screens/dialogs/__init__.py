"""Small modal dialogs over the screens: quitting during a launch (``quit``), the success threshold (``threshold``),
an attempt's log over the drill-down (``log``) and the confirmation of a publish or its undo (``confirm``)."""
