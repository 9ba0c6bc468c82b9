"""The text front end's pure floor: what the server and the runtime both need
to know about text (its script, whether it says anything, how long it will
take to speak), below both of them. No torch, asyncio or wire syntax here."""
