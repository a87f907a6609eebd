"""Small modal dialogs over the screens: quitting during a launch (``quit``) and the success threshold
(``threshold``)."""
